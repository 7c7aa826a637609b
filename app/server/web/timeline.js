// One session's events as a timeline: messages, thoughts, commands with their output
// (collapsible, exit code, duration), file edits as diffs, MCP calls and results, state
// changes, and each model call expandable to what was asked and answered. An observation
// is drawn inside the action that caused it. A redaction says what it removed from which
// event, by whom and why.

import { api } from "./api.js";
import { el } from "./dom.js";
import { clock, cost, duration, localTime, stateLabel } from "./format.js";
import { scoreClass, scoreLine } from "./trial.js";
import { annotationEntry } from "./annotations.js";
import { redactionEntry } from "./redact.js";
import { markCopied } from "./fork.js";

function stamp(event) {
  return el("time", { class: "when", datetime: event.created_at, title: localTime(event.created_at) },
    clock(event.created_at));
}

/** The event's number as a link to it (``#/sessions/ID/events/SEQ``): copy it to point at
 * the event; opening it draws the timeline around it. */
function seqLink(event, sessionId) {
  if (!sessionId) return el("span", { class: "seq" }, `#${event.seq}`);
  return el("a", { class: "seq", href: eventHref(sessionId, event.seq), title: "link to this event" }, `#${event.seq}`);
}

export function eventHref(sessionId, seq) {
  return `#/sessions/${sessionId}/events/${seq}`;
}

function item(event, sessionId, className, label, ...content) {
  return el("li", { class: `event ${className}`, "data-seq": event.seq, "data-kind": event.kind, tabindex: "-1" },
    el("div", { class: "meta" }, el("span", { class: "label" }, label), seqLink(event, sessionId), stamp(event)),
    ...content);
}

function pre(text, className = "") {
  return el("pre", { class: className }, text);
}

function thought(payload) {
  return payload.thought ? el("p", { class: "thought" }, el("span", { class: "visually-hidden" }, "Thought: "), payload.thought) : null;
}

export function diffView(diff) {
  const lines = (diff || "").split("\n");
  return el("pre", { class: "diff", "aria-label": "diff" }, lines.map((line) => {
    let kind = "ctx";
    if (line.startsWith("+++") || line.startsWith("---")) kind = "file";
    else if (line.startsWith("@@")) kind = "hunk";
    else if (line.startsWith("+")) kind = "add";
    else if (line.startsWith("-")) kind = "del";
    return el("span", { class: `d-${kind}` }, line + "\n");
  }));
}

function jsonBlock(value) {
  return pre(JSON.stringify(value, null, 2), "json");
}

function definition(rows) {
  return el("dl", { class: "facts" }, rows.filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

function messageText(content) {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part.type === "text" ? part.text : `[${part.type}]`).join("\n");
  return JSON.stringify(content, null, 2);
}

/** One prompt message as the model got it: its role, its text, the tool calls it carried. */
function promptMessage(message, index) {
  const calls = message.tool_calls || [];
  const text = messageText(message.content);
  return el("li", { class: `prompt-message role-${message.role}` },
    el("details", { open: message.role !== "system" && text.length < 2000 },
      el("summary", {}, el("strong", {}, message.role), ` · message ${index}`,
        message.name ? ` · ${message.name}` : "", message.tool_call_id ? ` · answers ${message.tool_call_id}` : "",
        ` · ${text.length.toLocaleString()} characters`),
      text ? pre(text, "prompt-text") : null,
      calls.length ? el("ul", { class: "tool-calls" }, calls.map((call) => {
        const fn = call.function || call;
        return el("li", {}, el("code", {}, fn.name), " ", pre(prettyArguments(fn.arguments ?? ""), "json"));
      })) : null));
}

function toolOffered(tool) {
  const fn = tool.function || tool;
  return el("li", {}, el("details", {}, el("summary", {}, el("code", {}, fn.name || "?"), fn.description ? ` — ${fn.description.split("\n")[0]}` : ""),
    jsonBlock(fn.parameters ?? tool)));
}

/** A token count of a call's usage: null is a count the model sent that could not be read. */
function tokens(count) {
  return count === null ? "unknown" : String(count ?? 0);
}

/** The usage line: cache reads and writes and reasoning tokens where the model sent them. */
export function usageText(usage) {
  const extra = [
    usage.cache_creation_tokens !== undefined ? `${tokens(usage.cache_creation_tokens)} written to cache` : null,
    usage.reasoning_tokens !== undefined ? `${tokens(usage.reasoning_tokens)} reasoning` : null,
  ].filter(Boolean);
  return `${tokens(usage.prompt_tokens)} prompt (${tokens(usage.cached_tokens)} cached), ${tokens(usage.completion_tokens)} completion` +
    (extra.length ? ` (${extra.join(", ")})` : "");
}

/** The model call as sent and received, from GET /api/sessions/{id}/model-calls/{seq}. */
function exactCall(call) {
  const messages = call.messages || call.prompt || [];
  const tools = call.tools || [];
  // tokens, cost, latency and attempts are in the call's own facts above: said once
  return [
    el("h3", {}, `Prompt (${messages.length} message${messages.length === 1 ? "" : "s"})`),
    el("ol", { class: "prompt-messages", start: 0 }, messages.map(promptMessage)),
    el("h3", {}, `Tools offered (${tools.length})`),
    tools.length ? el("ul", { class: "tools-offered" }, tools.map(toolOffered)) : el("p", { class: "muted" }, "none"),
    el("h3", {}, "Raw response"),
    jsonBlock(call.raw_response ?? call.response ?? null),
  ];
}

function loadExact(slot, sessionId, seq) {
  slot.dataset.loaded = "1";
  slot.replaceChildren(el("p", { class: "muted small", role: "status" }, "Loading the exact prompt…"));
  api(`/api/sessions/${sessionId}/model-calls/${seq}`)
    .then((call) => slot.replaceChildren(...exactCall(call)))
    .catch((error) => {
      delete slot.dataset.loaded; // opening it again tries again
      slot.replaceChildren(el("p", { class: "error", role: "alert" }, `The exact prompt could not be loaded: ${error.message}`));
    });
}

function modelCall(event, sessionId) {
  const p = event.payload;
  const usage = p.usage || {};
  const response = p.response || {};
  const retries = (p.attempts || 1) - 1;
  const summary = el("summary", { class: "meta" },
    el("span", { class: "label" }, p.error ? "Model call failed" : "Model call"),
    el("span", { class: "call-line" }, `${p.model} · ${tokens(usage.prompt_tokens)} in / ${tokens(usage.completion_tokens)} out · `,
      `${cost(p.cost_usd, p.cost_usd === null ? 1 : 0, 1)} · ${duration(p.latency_ms)}`,
      retries ? ` · ${retries} ${retries === 1 ? "retry" : "retries"}` : ""),
    seqLink(event, sessionId), stamp(event));
  const calls = (response.tool_calls || []).map((call) =>
    el("li", {}, el("code", {}, call.name), " ", pre(prettyArguments(call.arguments), "json")));
  const exact = el("section", { class: "exact", "aria-label": "The exact request and response" });
  const details = el("details", { class: "model-call" }, summary,
      el("div", { class: "details" },
        definition([
          ["Model", p.model],
          ["Prompt", `${p.prompt?.length ?? 0} message${p.prompt?.length === 1 ? "" : "s"}` +
            (p.prompt_kept ? ` after the previous call's first ${p.prompt_kept}` : "")],
          ["Tools offered", p.tools ? el("code", {}, p.tools.slice(0, 16)) : "none"],
          ["Tool calling", p.tool_calling],
          ["Usage", `${usageText(usage)}, ${tokens(usage.total_tokens)} total`],
          ["Usage as sent", usage.as_sent ? el("code", {}, JSON.stringify(usage.as_sent)) : null],
          ["Cost", p.cost_usd === null || p.cost_usd === undefined ? "unknown (no price for this model)" : `$${p.cost_usd.toFixed(6)}`],
          ["Attempts", String(p.attempts ?? 1)],
          ["Finish reason", response.finish_reason],
          ["Error", p.error ? `${p.error_kind ? p.error_kind + ": " : ""}${p.error}` : null],
        ]),
        response.reasoning_content ? el("h3", {}, "Reasoning") : null,
        response.reasoning_content ? pre(response.reasoning_content, "reasoning") : null,
        el("h3", {}, "Response"),
        response.content ? pre(response.content, "response") : el("p", { class: "muted" }, "No text."),
        calls.length ? el("h3", {}, "Tool calls") : null,
        calls.length ? el("ul", { class: "tool-calls" }, calls) : null,
        el("h3", {}, "Parameters"), jsonBlock(p.params || {}),
        sessionId ? el("p", {}, el("a", { class: "button secondary", href: `#/sessions/${sessionId}/calls/${event.seq}/playground` }, "Try in playground")) : null,
        exact,
        el("details", { class: "hashes" }, el("summary", {}, "Prompt message hashes"),
          el("ol", {}, (p.prompt || []).map((h) => el("li", {}, el("code", {}, h)))))));
  if (sessionId) {
    details.addEventListener("toggle", () => {
      if (details.open && !exact.dataset.loaded) loadExact(exact, sessionId, event.seq);
    });
  }
  return el("li", { class: `event llm${p.error ? " failed" : ""}`, "data-seq": event.seq, "data-kind": event.kind, tabindex: "-1" },
    details);
}

export function prettyArguments(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function command(event, sessionId) {
  const p = event.payload;
  const output = el("div", { class: "output-slot" }, el("p", { class: "muted small running" }, p.is_input ? "input sent…" : "running…"));
  return item(event, sessionId, "run", p.is_input ? "Input" : "Command", thought(p),
    pre(`$ ${p.command}`, "command"), output);
}

function commandOutput(event, action) {
  const p = event.payload;
  const took = action ? new Date(event.created_at) - new Date(action.created_at) : null;
  const exit = p.still_running ? "still running" : p.timed_out ? "timed out" : `exit ${p.exit_code}`;
  const ok = p.exit_code === 0 && !p.timed_out;
  const lines = (p.output || "").replace(/\n$/, "").split("\n").length;
  return el("details", { class: `output ${ok ? "ok" : "bad"}`, open: lines <= 12 },
    el("summary", {}, el("span", { class: `exit ${ok ? "ok" : "bad"}` }, exit),
      took !== null ? ` · ${duration(took)}` : "", ` · ${lines} line${lines === 1 ? "" : "s"} of output`,
      p.truncated ? " · truncated" : ""),
    pre(p.output || "", "stdout"));
}

function fileAction(event, sessionId) {
  const p = event.payload;
  const verb = event.kind === "file.read" ? "Read" : event.kind === "file.write" ? "Write" : `Edit (${p.command})`;
  return item(event, sessionId, "file", verb, thought(p), el("p", {}, el("code", {}, p.path)),
    el("div", { class: "output-slot" }));
}

function fileResult(event) {
  const p = event.payload;
  if (event.kind === "file.read.output") {
    return el("details", { class: "output" }, el("summary", {}, `${(p.content || "").split("\n").length} lines`), pre(p.content || ""));
  }
  if (p.diff) return diffView(p.diff);
  return p.content ? el("details", { class: "output" }, el("summary", {}, "content"), pre(p.content)) : el("p", { class: "muted small" }, "no change");
}

function mcpResult(event) {
  const p = event.payload;
  const text = (p.content || []).map((block) => block.type === "text" ? block.text : `[${block.type}]`).join("\n");
  return el("div", { class: p.is_error ? "bad" : "" }, p.is_error ? el("p", { class: "error" }, "The tool reported an error") : null,
    pre(text || JSON.stringify(p.structured_content ?? null, null, 2)));
}

export function renderEvent(event, sessionId) {
  const p = event.payload;
  switch (event.kind) {
    case "message": {
      const who = event.source === "user" ? (p.user || "user") : "agent";
      return item(event, sessionId, `message from-${event.source}`, `Message from ${who}`, el("div", { class: "bubble" }, p.content));
    }
    case "agent.state":
      return item(event, sessionId, `state state-${p.state}`, "State",
        el("p", {}, el("span", { class: `state state-${p.state}` }, stateLabel(p.state)),
          p.user ? ` by ${p.user}` : "", p.reason ? ` — ${p.reason}` : ""));
    case "llm.call":
      return modelCall(event, sessionId);
    case "run":
      return command(event, sessionId);
    case "think":
      return item(event, sessionId, "think", "Thought", el("p", { class: "thought" }, p.thought || ""));
    case "finish":
      return item(event, sessionId, "finish", "Finished", thought(p), p.message ? el("p", {}, p.message) : null);
    case "file.read": case "file.write": case "file.edit":
      return fileAction(event, sessionId);
    case "mcp.call":
      return item(event, sessionId, "mcp", `MCP ${p.server} · ${p.tool}`, thought(p), jsonBlock(p.arguments || {}), el("div", { class: "output-slot" }));
    case "error":
      return item(event, sessionId, "error", "Error", el("p", { class: "error" }, p.message));
    case "annotation":
      return item(event, sessionId, "annotation", "Annotation", annotationEntry(event));
    case "redaction":
      return item(event, sessionId, "redaction", "Redaction",
        redactionEntry(event, sessionId ? (seq) => eventHref(sessionId, seq) : null));
    case "session.created":
      return item(event, sessionId, "created", "Session created",
        el("p", {}, p.title ? el("strong", {}, p.title) : null),
        p.config?.from_call ? el("p", { class: "small from-call" }, "Playground run of ",
          el("a", { href: `#/sessions/${p.config.from_call.session}/calls/${p.config.from_call.seq}/playground` }, `call #${p.config.from_call.seq} of ${String(p.config.from_call.session).slice(0, 8)}`),
          `: ${(p.config.from_call.changes || []).join("; ") || "sent again as recorded"}`) : null,
        el("details", {}, el("summary", {}, "Configuration"), jsonBlock(p.config || {})));
    case "runtime.starting": case "runtime.ready": case "runtime.failed": case "runtime.restarted":
      return item(event, sessionId, event.kind === "runtime.failed" ? "error" : "quiet", `Sandbox ${event.kind.slice(8)}`,
        el("p", { class: "muted small" }, [p.runtime, p.sandbox_id, p.reason, p.message].filter(Boolean).join(" · ")));
    case "workspace.snapshot":
      return item(event, sessionId, "quiet", "Workspace snapshot", el("p", { class: "muted small" }, `${(p.files || []).length} files recorded`));
    case "eval.score": return item(event, sessionId, scoreClass(p), "Score", scoreLine(p));
    case "workspace.diff": {
      const left = (p.left_out || []).filter((x) => x.files > 0);
      const files = left.reduce((sum, x) => sum + x.files, 0);
      return item(event, sessionId, "file", "Workspace changes",
        left.length ? el("p", { class: "muted small left-out" },
          `${files} file${files === 1 ? "" : "s"} left out as noise: ${left.map((x) => x.pattern).join(", ")} · `,
          sessionId ? el("a", { href: `#/sessions/${sessionId}/workspace` }, "the workspace") : null) : null,
        p.diff ? diffView(p.diff) : el("p", { class: "muted small" }, "no change"));
    }
    default:
      return item(event, sessionId, "other", event.kind, el("details", {}, el("summary", {}, "Payload"), jsonBlock(p)));
  }
}

/** Observations drawn inside their action's item; null for anything else. */
export function renderResult(event, action) {
  switch (event.kind) {
    case "run.output": return commandOutput(event, action);
    case "file.read.output": case "file.write.output": case "file.edit.output": return fileResult(event);
    case "mcp.result": return mcpResult(event);
    case "error": return el("p", { class: "error", role: "note" }, `Error: ${event.payload.message}`);
    default: return null;
  }
}

/** An observation whose action is not drawn (it is before the window a link opened): drawn
 * on its own, saying which event it answers. */
function orphanResult(event, sessionId, result) {
  return item(event, sessionId, "result", "Result",
    el("p", { class: "muted small" }, "of ", el("a", { href: eventHref(sessionId, event.cause) }, `#${event.cause}`)), result);
}

// Lists longer than this skip drawing the events out of view (content-visibility), which
// keeps "Show all" on a 10,000-event session usable; shorter ones draw everything, so that
// printing or capturing the page shows every event.
const LONG_LIST = 1000;

/** The timeline list, shown a page at a time: the first ``firstPage`` events are drawn at
 * once, later ones wait (counted in the "more" bar) until the reader asks for them (its
 * buttons, or j on the last event), so a 10,000-event session opens as fast as a short one.
 * Nothing is drawn because the bar came into view: a full-page screenshot or a tall window
 * would then draw page after page until the whole log is on the page. Once everything
 * received is shown, new events are drawn as they come (live). Results are paired with
 * their actions whichever page they land on. A link to one event opens the list at a
 * window starting a little before it (``startAfter``); an event received twice (a page
 * fetched to reach a linked event, then the stream) is drawn once. */
export class Timeline {
  constructor(list, more, { firstPage = 200, page = 500, sessionId = null, startAfter = 0, decorate = null } = {}) {
    this.list = list;
    this.decorate = decorate; // (event, node, inside) for each event drawn: annotations.js
    this.sessionId = sessionId; // model calls open to their exact prompt from the API
    this.more = more;
    this.page = page;
    this.limit = firstPage;
    this.startAfter = startAfter; // events up to this seq are not in the list
    this.drawn = 0; // events drawn (results inside their action count too)
    this.lastDrawn = startAfter; // seq of the last event drawn
    this.received = startAfter; // seq of the last event received (drawn or pending)
    this.known = 0; // the highest seq the session is known to have
    this.pending = []; // received, not drawn yet
    this.actions = new Map(); // seq -> {event, node}
    this.marks = new Set(); // seqs a search matched: drawn with the class "match"
    this.moreText = el("span", { class: "more-text", role: "status", "aria-live": "polite" });
    this.nextButton = el("button", { type: "button", class: "secondary", onclick: () => this.showMore(this.page) });
    this.allButton = el("button", { type: "button", class: "secondary", onclick: () => this.showMore(Infinity) }, "Show all");
    more.replaceChildren(this.moreText, this.nextButton, this.allButton);
    more.hidden = true;
  }

  /** The session has at least ``seq`` events (from the events page's last_seq). */
  knownUpTo(seq) {
    this.known = Math.max(this.known, seq);
    this.updateMore();
  }

  /** Whether every event the session is known to have is on the page (then following the
   * end makes sense). */
  get caughtUp() {
    return this.pending.length === 0 && this.lastDrawn >= this.known;
  }

  append(received) {
    const events = received.filter((event) => event.seq > this.received);
    if (!events.length) return;
    this.received = events[events.length - 1].seq;
    // at the live edge (all the session had is drawn) new events are drawn as they come
    const live = this.caughtUp;
    this.known = Math.max(this.known, this.received);
    if (this.pending.length) this.pending.push(...events);
    else {
      const room = live ? events.length : Math.max(0, this.limit - this.drawn);
      this.draw(events.slice(0, room));
      this.pending = events.slice(room);
    }
    this.updateMore();
  }

  showMore(count) {
    if (this.caughtUp) return;
    this.limit = this.drawn + count; // events still on their way are drawn up to it
    const batch = this.pending.splice(0, count);
    this.draw(batch);
    this.updateMore();
  }

  updateMore() {
    this.more.hidden = this.caughtUp;
    if (this.more.hidden) return;
    const next = Math.min(this.page, this.known - this.lastDrawn);
    const from = this.startAfter ? ` from #${this.startAfter + 1}` : "";
    this.moreText.textContent = `Showing ${this.drawn.toLocaleString()} of ${this.known.toLocaleString()} events${from}.`;
    this.nextButton.textContent = `Show the next ${next.toLocaleString()}`;
  }

  /** The drawn element of event ``seq`` (an action's item, or a result inside it), or null. */
  nodeFor(seq) {
    return this.list.querySelector(`[data-seq="${Number(seq)}"]`);
  }

  /** Draws the list up to event ``seq`` when it is at most ``reach`` events past the last
   * drawn (fetching what has not been received yet); its element, or null when it is
   * before the window or too far ahead (the caller opens a window at it instead). */
  async drawThrough(seq, reach) {
    const found = this.nodeFor(seq);
    if (found || seq <= this.startAfter || seq - this.lastDrawn > reach) return found;
    while (this.received < seq && this.sessionId) {
      const page = await api(`/api/sessions/${this.sessionId}/events?after_seq=${this.received}&limit=${Math.min(1000, seq - this.received + 20)}`);
      this.knownUpTo(page.last_seq);
      if (!page.events.length) break;
      this.append(page.events);
    }
    const ahead = this.pending.findIndex((event) => event.seq >= seq);
    if (ahead >= 0) this.showMore(ahead + 1);
    return this.nodeFor(seq);
  }

  /** Marks the drawn events whose seq is in ``seqs`` (and those drawn later) as matches. */
  mark(seqs) {
    for (const node of this.list.querySelectorAll(".match")) node.classList.remove("match");
    this.marks = new Set(seqs);
    for (const seq of this.marks) this.nodeFor(seq)?.classList.add("match");
  }

  draw(events) {
    const fragment = document.createDocumentFragment();
    for (const event of events) {
      this.drawn += 1;
      this.lastDrawn = event.seq;
      const cause = event.cause ? this.actions.get(event.cause) : undefined;
      const result = renderResult(event, cause?.event);
      let node;
      if (result && cause) {
        result.dataset.seq = event.seq;
        result.dataset.kind = event.kind;
        const slot = cause.node.querySelector(".output-slot");
        if (slot) slot.replaceChildren(result);
        else cause.node.append(result);
        node = result;
      } else if (result && event.cause && event.cause <= this.startAfter) {
        node = orphanResult(event, this.sessionId, result);
        fragment.append(node);
      } else {
        node = renderEvent(event, this.sessionId);
        if (event.source === "agent" && node.querySelector(".output-slot")) this.actions.set(event.seq, { event, node });
        fragment.append(node);
      }
      if (this.marks.has(event.seq)) node.classList.add("match");
      this.decorate?.(event, node, Boolean(result && cause));
    }
    this.list.append(fragment);
    markCopied(this.list, events);
    this.list.classList.toggle("long", this.drawn > LONG_LIST);
  }

  close() {
    this.pending = [];
  }
}
