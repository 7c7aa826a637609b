// One session: its summary, steering (message, pause, resume, stop), verify and export, a
// search of its events, and its timeline, live over the stream. A link to one event
// (#/sessions/ID/events/SEQ) opens the timeline at it. An admin may redact an event, or a
// part of one (redact.js).

import { api, ApiError } from "./api.js";
import { el, clear } from "./dom.js";
import { EventFinder } from "./find.js";
import { age, cost, localTime, stateLabel } from "./format.js";
import { LiveStream } from "./stream.js";
import { Timeline, eventHref } from "./timeline.js";
import { showTrial } from "./trial.js";
import { showFork } from "./fork.js";
import { playgroundRunsSection } from "./playground.js";
import { SessionAnnotations } from "./annotations.js";
import { SessionRedactions } from "./redact.js";

const SUMMARY_EVERY_MS = 2000;
// Events drawn when the session opens (fetched as one page of the events API, so the first
// screen does not wait on the stream's backlog), and how many each "show more" adds.
const FIRST_PAGE = 200;
const NEXT_PAGE = 500;
// The performance mark set once the first page is on the screen (chronicle bench ui reads it).
export const FIRST_SCREEN_MARK = "chronicle:timeline-first-screen";
// A linked event further than this past the events drawn opens a window at it (from a few
// events before it on), rather than drawing everything up to it.
const REVEAL_REACH = 2000;
const BEFORE_TARGET = 20;

/** What the page shows for a session that is not there, or not the reader's: that alone. */
export function notFoundView(main, what) {
  clear(main).append(
    el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, el("a", { href: "#/" }, "Sessions")),
    el("section", { class: "card narrow", "aria-labelledby": "missing-title" },
      el("h1", { id: "missing-title" }, "No such session"),
      el("p", {}, what),
      el("p", {}, el("a", { href: "#/" }, "Back to the sessions"))));
}

/** A button copying a whole id (or offering it to copy where the page may not write to the
 * clipboard): the page shows 8 characters of an id. */
export function copyButton(id, label = "Copy id") {
  const button = el("button", { type: "button", class: "link copy-id", title: id, "aria-label": `${label}: ${id}` }, label);
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(id);
      button.textContent = "Copied";
      setTimeout(() => { button.textContent = label; }, 1500);
    } catch {
      window.prompt("Copy the id:", id);
    }
  });
  return button;
}

/** The session page, opened at event ``target`` when given. The function returned leaves
 * the page; its ``navigate(seq)`` opens another event of the same session in place (a
 * #seq link, a search match) without building the page again. */
export function sessionView({ main, me, showError, clearError }, id, target = null) {
  const title = el("h1", { id: "session-title" }, "Session");
  const state = el("span", { class: "state", id: "session-state" }, "…");
  const facts = el("p", { class: "muted small facts-line" });
  const reasonLine = el("p", { class: "reason", hidden: true });
  const connection = el("span", { class: "connection", role: "status", "aria-live": "polite" }, "connecting");
  const verifyResult = el("span", { class: "verify", role: "status", "aria-live": "polite" });
  const button = (label, action, help) => el("button", { type: "button", "data-action": action, title: help }, label);
  const pause = button("Pause", "pause", "pause after the current step");
  const resume = button("Resume", "resume", "let a paused or stopped session go on");
  const stop = button("Stop", "stop", "stop after the current step");
  // Each enabled only where it applies to the session's state (the summary's "steering"):
  // the API refuses the others with 409, e.g. a stop of a finished session.
  const steering = { pause, resume, stop };
  for (const control of Object.values(steering)) control.disabled = true;
  let applicable = [];
  function enableSteering(actions) {
    applicable = actions || [];
    for (const [action, control] of Object.entries(steering)) control.disabled = !applicable.includes(action);
  }
  const verify = button("Verify", "verify", "check the hash chain now");
  const exportLink = el("a", { class: "button secondary", href: `/api/sessions/${id}/export`, download: `${id}.jsonl` }, "Export");
  const replayLink = el("a", { class: "button secondary", href: `#/replays/${id}`, title: "run it again with another agent configuration" }, "Replay…");
  const message = el("textarea", { id: "message", name: "message", rows: 2, required: true, placeholder: "Tell the agent something…" });
  const send = el("button", { type: "submit" }, "Send");
  const messageForm = el("form", { class: "message-form", "aria-label": "Send the agent a message" },
    el("label", { for: "message", class: "visually-hidden" }, "Message to the agent"), message, send);
  const list = el("ol", { class: "timeline", "aria-label": "Events, oldest first", "aria-live": "polite", "aria-relevant": "additions" });
  const follow = el("input", { type: "checkbox", id: "follow", checked: true });
  const before = el("p", { class: "timeline-before small", hidden: true });
  const more = el("div", { class: "timeline-more", "aria-label": "Later events" });
  const crumbId = el("code", { class: "session-id", title: id }, id.slice(0, 8));
  const annotations = new SessionAnnotations({ sessionId: id, list, showError });
  // after a redaction the events are drawn again from the API, so every part it removed (in
  // other events too: a long text stored once) reads as its placeholder
  const redactions = new SessionRedactions({ sessionId: id, list, isAdmin: me?.is_admin,
    onRedacted: async (seq) => {
      try {
        if (await openWindow(timeline ? timeline.startAfter : 0)) await navigate(seq);
      } catch (error) {
        showError(error);
      }
    } });

  let closed = false;
  let summaryTimer = null;
  let summaryDue = 0;
  let timeline = null;
  let stream = null;
  let opening = 0; // a window opened while another loads replaces it
  const finder = new EventFinder(id, {
    open: (seq) => navigate(seq),
    onMatches: (seqs) => timeline?.mark(seqs),
    showError,
  });

  function layout() {
    clear(main).append(
      el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, el("a", { href: "#/" }, "Sessions"), " / ",
        el("span", { class: "crumb-session" }, crumbId, " ", copyButton(id))),
      el("section", { class: "summary", "aria-labelledby": "session-title" },
        el("div", { class: "heading" }, title, state),
        facts,
        reasonLine,
        annotations.summaryChips,
        el("div", { class: "controls", role: "toolbar", "aria-label": "Steer the session" },
          pause, resume, stop, el("span", { class: "spacer" }), verify, verifyResult, exportLink, replayLink,
          el("a", { class: "button secondary", href: `#/sessions/${id}/workspace`, title: "the files at the end, with the diff against the start" }, "Workspace"),
          annotations.button)),
      playgroundRunsSection(id),
      messageForm,
      el("div", { class: "timeline-head" }, el("h2", {}, "Timeline"), connection,
        el("label", { for: "follow", class: "small" }, follow, " follow new events")),
      finder.element,
      el("p", { class: "muted small keys" }, "Keys: j / k move between events, Enter opens a model call or an output, / finds, n / N go to the next or previous match, m writes a message."),
      before, list, more, redactions.element);
  }

  function showSummary(s) {
    title.textContent = s.title || "Session";
    state.textContent = stateLabel(s.state);
    state.className = `state state-${s.state || "starting"}`;
    enableSteering(s.steering);
    const errors = s.errors ? el("button", { type: "button", class: "link errors-link", title: "find the errors in the timeline",
      onclick: () => finder.showErrors() }, `${s.errors} error${s.errors === 1 ? "" : "s"}`) : null;
    facts.replaceChildren(...[
      `${s.model || "model ?"} · ${s.runtime || ""} · ${s.steps} step${s.steps === 1 ? "" : "s"} · `,
      `${s.model_calls} model call${s.model_calls === 1 ? "" : "s"} · ${s.input_tokens + s.output_tokens} tokens · `,
      `${cost(s.cost_usd, s.unpriced_calls, s.model_calls)} · `,
      errors, errors ? " · " : null, "started ",
      el("time", { datetime: s.created_at, title: localTime(s.created_at) }, localTime(s.created_at)),
      ` (${age(s.created_at)} ago)`,
      s.replay_of ? el("span", {}, " · replay of ", el("a", { href: `#/sessions/${s.replay_of}` }, s.replay_of.slice(0, 8)),
        " (", el("a", { href: `#/replays/${s.replay_of}/${id}` }, "compare side by side"), ")") : null,
    ].filter(Boolean));
    // an error's reason whole, where it can be read (the facts line is one line of many)
    const failed = s.state === "error" && s.reason;
    reasonLine.hidden = !failed;
    reasonLine.replaceChildren(...(failed ? [el("strong", {}, "Why it stopped: "), s.reason] : []));
    showTrial(main, s);
    showFork(main, s);
  }

  async function refreshSummary() {
    summaryTimer = null;
    summaryDue = Date.now() + SUMMARY_EVERY_MS;
    try {
      const s = await api(`/api/sessions/${id}`);
      if (!closed) showSummary(s);
    } catch (error) {
      if (closed) return;
      if (error.status === 404) summaryTimer = setTimeout(refreshSummary, SUMMARY_EVERY_MS); // not listed yet
      else showError(error);
    }
  }

  function summarySoon() {
    if (summaryTimer !== null || closed) return;
    summaryTimer = setTimeout(refreshSummary, Math.max(0, summaryDue - Date.now()));
  }

  function onEvents(events) {
    const atBottom = follow.checked && timeline.caughtUp;
    annotations.take(events);
    redactions.take(events);
    timeline.append(events);
    for (const event of events) {
      if (event.kind === "agent.state" && event.source === "agent") { // a user's is a request
        state.textContent = stateLabel(event.payload.state);
        state.className = `state state-${event.payload.state}`;
      }
      if (event.kind === "session.created" && event.payload.title) title.textContent = event.payload.title;
    }
    if (atBottom && timeline.caughtUp && !target) list.lastElementChild?.scrollIntoView({ block: "nearest" });
    summarySoon();
  }

  /** The timeline from event ``startAfter + 1`` on: its first page from the events API,
   * drawn at once, then the stream from after it (its backlog waits in the "more" bar until
   * asked for). Null when the session is not there (the page then says so, alone). */
  async function openWindow(startAfter) {
    const mine = ++opening;
    // with the annotations (read once), so the first screen has their chips wherever they are
    const [page] = await Promise.all([api(`/api/sessions/${id}/events?after_seq=${startAfter}&limit=${FIRST_PAGE}`), annotations.load()]);
    if (closed || mine !== opening) return null;
    stream?.close();
    timeline?.close();
    list.replaceChildren();
    redactions.reset();
    timeline = new Timeline(list, more, { firstPage: FIRST_PAGE, page: NEXT_PAGE, sessionId: id, startAfter,
      decorate: (event, node, inside) => {
        annotations.decorate(event, node, inside);
        redactions.decorate(event, node, inside);
      } });
    timeline.mark(finder.matches.map((m) => m.seq));
    before.hidden = startAfter === 0;
    before.replaceChildren(...(startAfter ? [`Events #1 to #${startAfter} are not shown. `,
      el("button", { type: "button", class: "link", onclick: () => navigate(null) }, "Show from the start")] : []));
    timeline.knownUpTo(page.last_seq);
    onEvents(page.events);
    const after = page.events.length ? page.events[page.events.length - 1].seq : startAfter;
    stream = new LiveStream(id, {
      afterSeq: after,
      onEvents,
      onStatus(status) {
        connection.textContent = status;
        connection.dataset.status = status;
      },
      onRevoked(detail) {
        showError(new ApiError(401, detail)); // back to the sign-in form
      },
    });
    window.chronicleStream = stream; // for people debugging a stream from the console
    return page;
  }

  /** Shows event ``seq``: drawn (the list drawn up to it, or a window opened at it),
   * outlined, scrolled to and focused, a model call or an output opened. */
  async function show(seq) {
    let node = await timeline.drawThrough(seq, REVEAL_REACH);
    if (!node && !closed) {
      await openWindow(Math.max(0, seq - 1 - BEFORE_TARGET));
      node = timeline?.nodeFor(seq);
    }
    if (!node || closed) {
      if (!closed) showError(new Error(`This session has no event #${seq} (yet).`));
      return;
    }
    for (const old of list.querySelectorAll(".target")) old.classList.remove("target");
    node.classList.add("target");
    const foldable = node.matches("details") ? node : node.querySelector(":scope > details.model-call");
    if (foldable) foldable.open = true;
    follow.checked = false;
    const item = node.closest(".timeline > li") || node;
    item.scrollIntoView({ block: "center" });
    item.focus({ preventScroll: true });
  }

  /** Another event of this session (null: the start), opened without leaving the page. */
  async function navigate(seq) {
    target = seq;
    const wanted = seq === null ? `#/sessions/${id}` : eventHref(id, seq);
    if (location.hash !== wanted) history.replaceState(null, "", wanted);
    try {
      if (seq === null) {
        if (timeline.startAfter > 0) await openWindow(0);
        list.firstElementChild?.scrollIntoView({ block: "start" });
      } else await show(seq);
    } catch (error) {
      showError(error);
    }
  }

  async function start() {
    let page;
    try {
      page = await openWindow(target ? Math.max(0, target - 1 - BEFORE_TARGET) : 0);
    } catch (error) {
      if (closed) return;
      if (error.status === 404) {
        notFoundView(main, `There is no session ${id}, or it is not yours.`);
        return;
      }
      showError(error);
      return;
    }
    if (!page) return;
    layout();
    requestAnimationFrame(() => setTimeout(() => performance.mark(FIRST_SCREEN_MARK), 0));
    refreshSummary();
    if (target) await navigate(target);
  }

  async function steer(action, control) {
    clearError();
    control.disabled = true;
    try {
      await api(`/api/sessions/${id}/${action}`, { method: "POST" });
    } catch (error) {
      showError(error);
    } finally {
      control.disabled = !applicable.includes(action);
      summarySoon(); // what applies now comes with the summary
    }
  }
  pause.addEventListener("click", () => steer("pause", pause));
  resume.addEventListener("click", () => steer("resume", resume));
  stop.addEventListener("click", () => steer("stop", stop));
  verify.addEventListener("click", async () => {
    clearError();
    verifyResult.textContent = "checking…";
    verifyResult.className = "verify";
    try {
      const report = await api(`/api/sessions/${id}/verify`);
      verifyResult.textContent = report.ok ? `✓ intact (${report.checked} events)` : `✗ broken${report.first_bad_seq ? ` at #${report.first_bad_seq}` : ""}: ${report.reason}`;
      verifyResult.className = `verify ${report.ok ? "ok" : "bad"}`;
    } catch (error) {
      verifyResult.textContent = "";
      showError(error);
    }
  });
  messageForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const content = message.value.trim();
    if (!content) return;
    clearError();
    send.disabled = true;
    try {
      await api(`/api/sessions/${id}/messages`, { method: "POST", body: { content } });
      message.value = "";
    } catch (error) {
      showError(error);
    } finally {
      send.disabled = false;
    }
  });
  message.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) messageForm.requestSubmit();
  });

  const keys = (event) => {
    if (event.target.matches("input, select, textarea") || event.target.closest("dialog") || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "m" || event.key === "/") {
      if (event.key === "m") message.focus();
      else finder.focus();
      event.preventDefault();
      return;
    }
    if (event.key === "n" || event.key === "N") {
      finder.step(event.key === "n" ? 1 : -1);
      event.preventDefault();
      return;
    }
    if (event.key !== "j" && event.key !== "k") return;
    let items = [...list.children];
    if (!items.length) return;
    const at = items.indexOf(document.activeElement?.closest?.(".timeline > li"));
    if (event.key === "j" && at === items.length - 1 && !timeline.caughtUp) {
      timeline.showMore(NEXT_PAGE);
      items = [...list.children];
    }
    const next = items[event.key === "j" ? Math.min(items.length - 1, at + 1) : Math.max(0, at < 0 ? items.length - 1 : at - 1)];
    next.focus();
    follow.checked = false;
    event.preventDefault();
  };
  list.addEventListener("keydown", (event) => {
    // Enter on an event (not on a control inside it) opens or folds its first part
    if (event.key !== "Enter" || event.target.parentElement !== list) return;
    const details = event.target.querySelector("details");
    if (details) details.open = !details.open;
    event.preventDefault();
  });
  document.addEventListener("keydown", keys);
  clear(main).append(el("p", { class: "muted", role: "status" }, "Loading the session…"));
  start();

  const leave = () => {
    closed = true;
    stream?.close();
    timeline?.close();
    finder.close();
    clearTimeout(summaryTimer);
    document.removeEventListener("keydown", keys);
    if (window.chronicleStream === stream) delete window.chronicleStream;
  };
  leave.sessionId = id;
  leave.navigate = navigate;
  return leave;
}
