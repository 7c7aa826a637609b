// One session: its summary, steering (message, pause, resume, stop), verify and export, and
// its timeline, live over the stream.

import { api, ApiError } from "./api.js";
import { el, clear } from "./dom.js";
import { age, cost, localTime, stateLabel } from "./format.js";
import { LiveStream } from "./stream.js";
import { Timeline } from "./timeline.js";
import { playgroundRunsSection } from "./playground.js";

const SUMMARY_EVERY_MS = 2000;
// Events drawn when the session opens (fetched as one page of the events API, so the first
// screen does not wait on the stream's backlog), and how many each "show more" adds.
const FIRST_PAGE = 200;
const NEXT_PAGE = 500;
// The performance mark set once the first page is on the screen (chronicle bench ui reads it).
export const FIRST_SCREEN_MARK = "chronicle:timeline-first-screen";

export function sessionView({ main, showError, clearError }, id) {
  const title = el("h1", { id: "session-title" }, "Session");
  const state = el("span", { class: "state", id: "session-state" }, "…");
  const facts = el("p", { class: "muted small facts-line" });
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
  const more = el("div", { class: "timeline-more", "aria-label": "Later events" });

  clear(main).append(
    el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, el("a", { href: "#/" }, "Sessions"), " / ", el("span", {}, id.slice(0, 8))),
    el("section", { class: "summary", "aria-labelledby": "session-title" },
      el("div", { class: "heading" }, title, state),
      facts,
      el("div", { class: "controls", role: "toolbar", "aria-label": "Steer the session" },
        pause, resume, stop, el("span", { class: "spacer" }), verify, verifyResult, exportLink, replayLink)),
    playgroundRunsSection(id),
    messageForm,
    el("div", { class: "timeline-head" }, el("h2", {}, "Timeline"), connection,
      el("label", { for: "follow", class: "small" }, follow, " follow new events")),
    el("p", { class: "muted small" }, "Keys: j / k move between events, Enter opens a model call or an output, m writes a message."),
    list, more);

  const timeline = new Timeline(list, more, { firstPage: FIRST_PAGE, page: NEXT_PAGE, sessionId: id });
  let closed = false;
  let summaryTimer = null;
  let summaryDue = 0;

  function showSummary(s) {
    title.textContent = s.title || "Session";
    state.textContent = stateLabel(s.state);
    state.className = `state state-${s.state || "starting"}`;
    enableSteering(s.steering);
    facts.replaceChildren(...[
      `${s.model || "model ?"} · ${s.runtime || ""} · ${s.steps} step${s.steps === 1 ? "" : "s"} · `,
      `${s.model_calls} model call${s.model_calls === 1 ? "" : "s"} · ${s.input_tokens + s.output_tokens} tokens · `,
      `${cost(s.cost_usd, s.unpriced_calls, s.model_calls)} · started `,
      el("time", { datetime: s.created_at, title: localTime(s.created_at) }, localTime(s.created_at)),
      ` (${age(s.created_at)} ago)`,
      s.replay_of ? el("span", {}, " · replay of ", el("a", { href: `#/sessions/${s.replay_of}` }, s.replay_of.slice(0, 8)),
        " (", el("a", { href: `#/replays/${s.replay_of}/${id}` }, "compare side by side"), ")") : null,
      s.forked_from ? el("span", {}, " · fork of ", el("a", { href: `#/sessions/${s.forked_from}` }, s.forked_from.slice(0, 8))) : null,
    ].filter(Boolean));
  }

  async function refreshSummary() {
    summaryTimer = null;
    summaryDue = Date.now() + SUMMARY_EVERY_MS;
    try {
      const s = await api(`/api/sessions/${id}`);
      if (!closed) showSummary(s);
    } catch (error) {
      if (closed) return;
      if (error.status === 404 && list.children.length) {
        summaryTimer = setTimeout(refreshSummary, SUMMARY_EVERY_MS); // not listed yet
      } else if (error.status === 404) {
        showError(new Error("There is no such session, or it is not yours."));
      } else showError(error);
    }
  }

  function summarySoon() {
    if (summaryTimer !== null) return;
    summaryTimer = setTimeout(refreshSummary, Math.max(0, summaryDue - Date.now()));
  }

  function onEvents(events) {
    const atBottom = follow.checked && timeline.caughtUp;
    timeline.append(events);
    for (const event of events) {
      if (event.kind === "agent.state" && event.source === "agent") { // a user's is a request
        state.textContent = stateLabel(event.payload.state);
        state.className = `state state-${event.payload.state}`;
      }
      if (event.kind === "session.created" && event.payload.title) title.textContent = event.payload.title;
    }
    if (atBottom && timeline.caughtUp) list.lastElementChild?.scrollIntoView({ block: "nearest" });
    summarySoon();
  }

  let stream = null;
  async function openTimeline() {
    // The first page from the events API, drawn at once; then the stream from after it
    // (its backlog waits in the timeline's "more" bar until asked for).
    let after = 0;
    try {
      const page = await api(`/api/sessions/${id}/events?after_seq=0&limit=${FIRST_PAGE}`);
      if (closed) return;
      timeline.knownUpTo(page.last_seq);
      onEvents(page.events);
      after = page.events.length ? page.events[page.events.length - 1].seq : 0;
      requestAnimationFrame(() => setTimeout(() => performance.mark(FIRST_SCREEN_MARK), 0));
    } catch (error) {
      if (closed) return;
      // the summary says when the session is not there; the stream retries the rest
      if (error.status !== 404) showError(error);
    }
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
  }

  async function steer(action, target) {
    clearError();
    target.disabled = true;
    try {
      await api(`/api/sessions/${id}/${action}`, { method: "POST" });
    } catch (error) {
      showError(error);
    } finally {
      target.disabled = !applicable.includes(action);
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
    if (event.target.matches("input, select, textarea") || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "m") {
      message.focus();
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
  refreshSummary();
  openTimeline();

  return () => {
    closed = true;
    stream?.close();
    timeline.close();
    clearTimeout(summaryTimer);
    document.removeEventListener("keydown", keys);
    if (window.chronicleStream === stream) delete window.chronicleStream;
  };
}
