// Two sessions side by side, one step (model call) at a time: a replay beside its recording
// (replay.js), or one task's trials in two evaluation runs (evaluation_pair.js). Previous /
// Next step, a chip per step, [ and ]; each side's events of the step drawn by the timeline's
// renderers. What a caller adds (a divergence outlined, "Fork here") it adds per side in
// `decorate`.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { Timeline } from "./timeline.js";

/** Every event of a session, through the events API a page at a time. */
export async function allEvents(id) {
  const events = [];
  let after = 0;
  for (;;) {
    const page = await api(`/api/sessions/${id}/events?after_seq=${after}&limit=1000`);
    events.push(...page.events);
    if (page.next_after_seq === null || page.next_after_seq === undefined) return events;
    after = page.next_after_seq;
  }
}

/** A session's events cut into steps: step 0 is what came before the first model call, step
 * N starts at the Nth model call (the unit a replay's divergence names). */
export function steps(events) {
  const cut = [[]];
  for (const event of events) {
    if (event.kind === "llm.call") cut.push([]);
    cut[cut.length - 1].push(event);
  }
  return cut;
}

/** The stepper and the two columns. Each side is `{ key, events, session, heading, list,
 * missing }` (`heading`: the column's h2 content; `list`: its timeline's aria-label;
 * `missing`: what its empty step says). `chip(i)` is a step's chip class and aria-label
 * suffix ({ kind, note }); `start` the step shown first; `stepNote(i)` more words for the
 * step label; `onShow(i, sides)` runs after each step is drawn; `decorate(list, side)` after
 * each side is filled; `tools` are more buttons for the toolbar. Returns `{ node, show,
 * close }` (close takes the keys away). */
export function sideBySide({ left, right, chip = () => ({ kind: "same", note: "" }), start = null,
  stepNote = () => "", onShow = () => {}, decorate = () => {}, tools = [] }) {
  const leftSteps = steps(left.events);
  const rightSteps = steps(right.events);
  const count = Math.max(leftSteps.length, rightSteps.length) - 1;
  const label = el("span", { class: "step-label", role: "status", "aria-live": "polite" });
  const prev = el("button", { type: "button", class: "secondary" }, "← Previous step");
  const next = el("button", { type: "button", class: "secondary" }, "Next step →");
  const chips = el("ol", { class: "step-chips", "aria-label": "Steps" });
  const column = (side) => {
    const list = el("ol", { class: "timeline", "aria-label": side.list });
    const section = el("section", { class: `side ${side.key}`, "aria-labelledby": `side-${side.key}` },
      el("h2", { id: `side-${side.key}` }, side.heading), list);
    return { ...side, list, section, cut: side === left ? leftSteps : rightSteps };
  };
  const sides = [column(left), column(right)];
  let at = start ?? (count ? 1 : 0);

  chips.append(...Array.from({ length: count + 1 }, (_, i) => {
    const { kind, note } = chip(i);
    return el("li", {}, el("button", { type: "button", class: `chip ${kind}`, "data-step": i,
      "aria-label": `step ${i}${note ? `, ${note}` : ""}`, onclick: () => show(i) }, i === 0 ? "start" : String(i)));
  }));

  function fill(side, events) {
    const timeline = new Timeline(side.list, el("div"), { firstPage: Infinity, sessionId: side.session });
    timeline.append(events);
    timeline.close();
    decorate(side.list, side);
    if (!events.length) side.list.append(el("li", { class: "muted small empty" }, side.missing));
  }

  function show(step) {
    at = Math.max(0, Math.min(count, step));
    label.textContent = at === 0 ? `Before the first model call (${count} steps)` : `Step ${at} of ${count}${stepNote(at)}`;
    for (const button of chips.querySelectorAll("button")) button.setAttribute("aria-current", Number(button.dataset.step) === at ? "step" : "false");
    for (const side of sides) {
      clear(side.list);
      fill(side, side.cut[at] || []);
    }
    prev.disabled = at === 0;
    next.disabled = at === count;
    onShow(at, sides);
  }
  prev.addEventListener("click", () => show(at - 1));
  next.addEventListener("click", () => show(at + 1));

  const keys = (event) => {
    if (event.target.matches("input, select, textarea") || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "[") show(at - 1);
    else if (event.key === "]") show(at + 1);
  };
  document.addEventListener("keydown", keys);
  const node = el("div", { class: "side-by-side" },
    el("div", { class: "stepper", role: "toolbar", "aria-label": "Step through" }, prev, label, next, ...tools),
    chips,
    el("div", { class: "compare" }, ...sides.map((side) => side.section)));
  show(at);
  return { node, show, close: () => document.removeEventListener("keydown", keys) };
}
