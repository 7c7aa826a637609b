// A session that is a fork, shown as one: its title says whose fork it is and where it was
// cut ("Fork of «title» at #N"), its facts line links the source's event it was cut at, and
// in its timeline the events copied from the source (seq up to the fork point) are greyed
// and set apart from the fork's own by a divider. session.js and timeline.js call in here
// with one line each.

import { el } from "./dom.js";
import { eventHref } from "./timeline.js";

/** On the session page, once its summary is known: a fork's title, its source linked, and
 * its timeline's copied events set apart. */
export function showFork(main, summary) {
  const source = summary.forked_from;
  const at = summary.forked_at;
  if (!source || !at) return;
  const title = main.querySelector("#session-title");
  // a fork's session.created carries its source's title (copied with it)
  if (title) title.textContent = `Fork of «${summary.title || source.slice(0, 8)}» at #${at}`;
  const facts = main.querySelector(".facts-line");
  if (facts && !facts.querySelector(".fork-of")) {
    facts.append(el("span", { class: "fork-of" }, " · fork of ",
      el("a", { href: eventHref(source, at), title: `the source's event #${at}, the last one copied` }, `${source.slice(0, 8)} at #${at}`)));
  }
  const list = main.querySelector("ol.timeline");
  if (list && !list.dataset.forkedAt) {
    list.dataset.forkedAt = String(at);
    list.dataset.forkedFrom = source;
    markCopied(list);
  }
}

/** In a fork's timeline (its fork point known from the drawn ``session.created`` or from
 * the summary), the items copied from the source greyed (class ``copied``) and the divider
 * kept just after the last of them (focusable, so j / k step over it); called after each
 * draw. */
export function markCopied(list, events = []) {
  const created = events.find((e) => e.kind === "session.created" && e.payload.forked_at);
  if (created && !list.dataset.forkedAt) {
    list.dataset.forkedAt = String(created.payload.forked_at);
    list.dataset.forkedFrom = created.payload.forked_from;
  }
  const at = Number(list.dataset.forkedAt || 0);
  if (!at) return;
  let last = null;
  for (const item of list.querySelectorAll(":scope > li[data-seq]:not(.copied):not(.own)")) {
    const copied = Number(item.dataset.seq) <= at;
    item.classList.add(copied ? "copied" : "own");
    if (copied) last = item;
  }
  if (!last) return;
  const source = list.dataset.forkedFrom;
  const divider = list.querySelector(":scope > .fork-divider") ||
    el("li", { class: "fork-divider", tabindex: "-1" }, // read as it is shown, its link too
      el("span", {}, "Copied from ", el("a", { href: eventHref(source, at) }, source.slice(0, 8)), ` up to #${at}; the fork's own events follow`));
  last.after(divider);
}
