// One session's events as a timeline: messages, thoughts, commands with their output
// (collapsible, exit code, duration), file edits as diffs, MCP calls and results, state
// changes, and each model call expandable to what was asked and answered. An observation
// is drawn inside the action that caused it.

import { el } from "./dom.js";
import { clock, cost, duration, localTime, stateLabel } from "./format.js";

function stamp(event) {
  return el("time", { class: "when", datetime: event.created_at, title: localTime(event.created_at) },
    clock(event.created_at));
}

function item(event, className, label, ...content) {
  return el("li", { class: `event ${className}`, "data-seq": event.seq, "data-kind": event.kind, tabindex: "-1" },
    el("div", { class: "meta" }, el("span", { class: "label" }, label), el("span", { class: "seq" }, `#${event.seq}`), stamp(event)),
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

function modelCall(event) {
  const p = event.payload;
  const usage = p.usage || {};
  const response = p.response || {};
  const retries = (p.attempts || 1) - 1;
  const summary = el("summary", {},
    el("span", { class: "label" }, p.error ? "Model call failed" : "Model call"),
    ` ${p.model} · ${usage.prompt_tokens ?? 0} in / ${usage.completion_tokens ?? 0} out · `,
    `${cost(p.cost_usd, p.cost_usd === null ? 1 : 0, 1)} · ${duration(p.latency_ms)}`,
    retries ? ` · ${retries} ${retries === 1 ? "retry" : "retries"}` : "");
  const calls = (response.tool_calls || []).map((call) =>
    el("li", {}, el("code", {}, call.name), " ", pre(prettyArguments(call.arguments), "json")));
  return el("li", { class: `event llm${p.error ? " failed" : ""}`, "data-seq": event.seq, "data-kind": event.kind, tabindex: "-1" },
    el("details", { class: "model-call" }, summary,
      el("div", { class: "details" },
        definition([
          ["When", localTime(event.created_at)],
          ["Model", p.model],
          ["Prompt", `${p.prompt?.length ?? 0} message${p.prompt?.length === 1 ? "" : "s"}` +
            (p.prompt_kept ? ` after the previous call's first ${p.prompt_kept}` : "")],
          ["Tools offered", p.tools ? el("code", {}, p.tools.slice(0, 16)) : "none"],
          ["Tool calling", p.tool_calling],
          ["Tokens", `${usage.prompt_tokens ?? 0} prompt (${usage.cached_tokens ?? 0} cached), ${usage.completion_tokens ?? 0} completion, ${usage.total_tokens ?? 0} total`],
          ["Cost", p.cost_usd === null || p.cost_usd === undefined ? "unknown (no price for this model)" : `$${p.cost_usd.toFixed(6)}`],
          ["Latency", duration(p.latency_ms)],
          ["Attempts", String(p.attempts ?? 1)],
          ["Finish reason", response.finish_reason],
          ["Error", p.error ? `${p.error_kind ? p.error_kind + ": " : ""}${p.error}` : null],
        ]),
        el("h3", {}, "Response"),
        response.content ? pre(response.content, "response") : el("p", { class: "muted" }, "No text."),
        calls.length ? el("h3", {}, "Tool calls") : null,
        calls.length ? el("ul", { class: "tool-calls" }, calls) : null,
        el("h3", {}, "Parameters"), jsonBlock(p.params || {}),
        el("details", { class: "hashes" }, el("summary", {}, "Prompt message hashes"),
          el("ol", {}, (p.prompt || []).map((h) => el("li", {}, el("code", {}, h))))))));
}

function prettyArguments(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function command(event) {
  const p = event.payload;
  const output = el("div", { class: "output-slot" }, el("p", { class: "muted small running" }, p.is_input ? "input sent…" : "running…"));
  return item(event, "run", p.is_input ? "Input" : "Command", thought(p),
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

function fileAction(event) {
  const p = event.payload;
  const verb = event.kind === "file.read" ? "Read" : event.kind === "file.write" ? "Write" : `Edit (${p.command})`;
  return item(event, "file", verb, thought(p), el("p", {}, el("code", {}, p.path)),
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

export function renderEvent(event) {
  const p = event.payload;
  switch (event.kind) {
    case "message": {
      const who = event.source === "user" ? (p.user || "user") : "agent";
      return item(event, `message from-${event.source}`, `Message from ${who}`, el("div", { class: "bubble" }, p.content));
    }
    case "agent.state":
      return item(event, `state state-${p.state}`, "State",
        el("p", {}, el("span", { class: `state state-${p.state}` }, stateLabel(p.state)),
          p.user ? ` by ${p.user}` : "", p.reason ? ` — ${p.reason}` : ""));
    case "llm.call":
      return modelCall(event);
    case "run":
      return command(event);
    case "think":
      return item(event, "think", "Thought", el("p", { class: "thought" }, p.thought || ""));
    case "finish":
      return item(event, "finish", "Finished", thought(p), p.message ? el("p", {}, p.message) : null);
    case "file.read": case "file.write": case "file.edit":
      return fileAction(event);
    case "mcp.call":
      return item(event, "mcp", `MCP ${p.server} · ${p.tool}`, thought(p), jsonBlock(p.arguments || {}), el("div", { class: "output-slot" }));
    case "error":
      return item(event, "error", "Error", el("p", { class: "error" }, p.message));
    case "session.created":
      return item(event, "created", "Session created",
        el("p", {}, p.title ? el("strong", {}, p.title) : null),
        el("details", {}, el("summary", {}, "Configuration"), jsonBlock(p.config || {})));
    case "runtime.starting": case "runtime.ready": case "runtime.failed": case "runtime.restarted":
      return item(event, event.kind === "runtime.failed" ? "error" : "quiet", `Sandbox ${event.kind.slice(8)}`,
        el("p", { class: "muted small" }, [p.runtime, p.sandbox_id, p.reason, p.message].filter(Boolean).join(" · ")));
    case "workspace.snapshot":
      return item(event, "quiet", "Workspace snapshot", el("p", { class: "muted small" }, `${(p.files || []).length} files recorded`));
    case "workspace.diff":
      return item(event, "file", "Workspace changes", p.diff ? diffView(p.diff) : el("p", { class: "muted small" }, "no change"));
    default:
      return item(event, "other", event.kind, el("details", {}, el("summary", {}, "Payload"), jsonBlock(p)));
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

/** The timeline list, shown a page at a time: the first ``firstPage`` events are drawn at
 * once, later ones wait (counted in the "more" bar) until the reader asks for them or scrolls
 * to the bar, so a 10,000-event session opens as fast as a short one. Once everything
 * received is shown, new events are drawn as they come (live). Results are paired with
 * their actions whichever page they land on. */
export class Timeline {
  constructor(list, more, { firstPage = 200, page = 500 } = {}) {
    this.list = list;
    this.more = more;
    this.page = page;
    this.limit = firstPage;
    this.drawn = 0; // events drawn (results inside their action count too)
    this.lastDrawn = 0; // seq of the last event drawn
    this.known = 0; // the highest seq the session is known to have
    this.pending = []; // received, not drawn yet
    this.actions = new Map(); // seq -> {event, node}
    this.moreText = el("span", { class: "more-text", role: "status", "aria-live": "polite" });
    this.nextButton = el("button", { type: "button", class: "secondary", onclick: () => this.showMore(this.page) });
    this.allButton = el("button", { type: "button", class: "secondary", onclick: () => this.showMore(Infinity) }, "Show all");
    more.replaceChildren(this.moreText, this.nextButton, this.allButton);
    more.hidden = true;
    this.observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting) && !this.caughtUp) this.showMore(this.page);
    }, { rootMargin: "400px 0px" });
    this.observer.observe(more);
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

  append(events) {
    if (!events.length) return;
    // at the live edge (all the session had is drawn) new events are drawn as they come
    const live = this.caughtUp;
    this.known = Math.max(this.known, events[events.length - 1].seq);
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
    this.moreText.textContent = `Showing ${this.drawn.toLocaleString()} of ${this.known.toLocaleString()} events.`;
    this.nextButton.textContent = `Show the next ${next.toLocaleString()}`;
  }

  draw(events) {
    const fragment = document.createDocumentFragment();
    for (const event of events) {
      this.drawn += 1;
      this.lastDrawn = event.seq;
      const cause = event.cause ? this.actions.get(event.cause) : undefined;
      const result = cause ? renderResult(event, cause.event) : null;
      if (result) {
        result.dataset.seq = event.seq;
        result.dataset.kind = event.kind;
        const slot = cause.node.querySelector(".output-slot");
        if (slot) slot.replaceChildren(result);
        else cause.node.append(result);
        continue;
      }
      const node = renderEvent(event);
      if (event.source === "agent" && node.querySelector(".output-slot")) this.actions.set(event.seq, { event, node });
      fragment.append(node);
    }
    this.list.append(fragment);
  }

  close() {
    this.observer.disconnect();
  }
}
