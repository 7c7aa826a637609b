// The sessions list (live: polled while open; filters by state, model and words of the title,
// all applied by the API; replays and forks under their source) and the new-session form.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { age, cost, localTime, stateLabel } from "./format.js";
import { annotationFilters } from "./annotations.js";

const STATES = ["running", "interrupted", "awaiting_user_input", "paused", "stopped", "finished", "limit", "error"];
const POLL_MS = 3000;
const TYPING_MS = 250; // the text filter asks the API once typing pauses

function branchesUnderSources(sessions) {
  // A replay or fork follows its source when the source is listed; else it stands alone.
  const byId = new Map(sessions.map((s) => [s.id, s]));
  const children = new Map();
  const roots = [];
  for (const s of sessions) {
    const source = s.replay_of || s.forked_from;
    if (source && byId.has(source)) {
      if (!children.has(source)) children.set(source, []);
      children.get(source).push(s);
    } else roots.push(s);
  }
  const ordered = [];
  const visit = (s, depth) => {
    ordered.push({ session: s, depth });
    for (const child of children.get(s.id) || []) visit(child, depth + 1);
  };
  roots.forEach((s) => visit(s, 0));
  return ordered;
}

function row({ session: s, depth }, go) {
  const open = () => go(`/sessions/${s.id}`);
  const branch = s.replay_of ? "replay" : s.forked_from ? "fork" : null;
  return el("tr", { class: depth ? "branch" : null, "data-id": s.id },
    el("td", { "data-label": "Session", style: depth ? `padding-left:${0.5 + depth * 1.25}rem` : null },
      depth ? el("span", { class: "muted", "aria-hidden": "true" }, "↳ ") : null,
      branch ? el("span", { class: "tag" }, branch) : null,
      el("a", { href: `#/sessions/${s.id}`, onclick: (e) => { e.preventDefault(); open(); } }, s.title || s.id)),
    el("td", { "data-label": "State" }, el("span", { class: `state state-${s.state || "starting"}` }, stateLabel(s.state))),
    el("td", { "data-label": "Model" }, s.model || ""),
    el("td", { "data-label": "Steps", class: "num" }, String(s.steps)),
    el("td", { "data-label": "Cost", class: "num" }, cost(s.cost_usd, s.unpriced_calls, s.model_calls)),
    el("td", { "data-label": "Age", class: "num" },
      el("time", { datetime: s.created_at, title: localTime(s.created_at) }, age(s.created_at))));
}

export function sessionsView({ main, showError, clearError, go }) {
  const params = new URLSearchParams();
  const state = el("select", { id: "f-state", name: "state" },
    el("option", { value: "" }, "any state"), STATES.map((s) => el("option", { value: s }, stateLabel(s))));
  const model = el("input", { id: "f-model", name: "model", type: "text", placeholder: "e.g. openai/gpt-4o", autocomplete: "off" });
  const text = el("input", { id: "f-text", name: "text", type: "search", placeholder: "words in the title", autocomplete: "off", "aria-describedby": "f-text-help" });
  const byAnnotation = annotationFilters(() => load());
  const body = el("tbody");
  const status = el("p", { class: "muted", role: "status", "aria-live": "polite" }, "Loading sessions…");
  const table = el("table", { class: "sessions", "aria-describedby": "sessions-status" },
    el("caption", { class: "visually-hidden" }, "Your sessions, newest first"),
    el("thead", {}, el("tr", {},
      ["Session", "State", "Model", "Steps", "Cost", "Age"].map((h) => el("th", { scope: "col" }, h)))),
    body);
  status.id = "sessions-status";
  const filters = el("form", { class: "filters", role: "search", "aria-label": "Filter sessions" },
    el("div", {}, el("label", { for: "f-state" }, "State"), state),
    el("div", {}, el("label", { for: "f-model" }, "Model"), model),
    el("div", {}, el("label", { for: "f-text" }, "Text"), text,
      el("p", { class: "visually-hidden", id: "f-text-help" }, "Sessions whose title has words beginning with each of these")),
    byAnnotation.fields);
  filters.addEventListener("submit", (e) => e.preventDefault());
  clear(main).append(
    el("div", { class: "heading" }, el("h1", {}, "Sessions"),
      el("a", { class: "button", href: "#/new" }, "New session")),
    filters, status, el("div", { class: "table-wrap" }, table),
    el("p", { class: "muted small" }, "Keys: j / k move between sessions, Enter opens one. Times are in your time zone."));

  let sessions = [];
  let timer = null;
  let typing = null;
  let stopped = false;
  let asked = 0; // the newest request's number: an older answer arriving late is dropped

  function draw() {
    const shown = sessions;
    const filtered = Boolean(state.value || model.value.trim() || text.value.trim() || byAnnotation.active());
    const focused = document.activeElement?.closest?.("tr")?.dataset.id;
    body.replaceChildren(...branchesUnderSources(shown).map((item) => row(item, go)));
    if (focused) body.querySelector(`tr[data-id="${focused}"] a`)?.focus();
    status.textContent = shown.length
      ? `${shown.length}${shown.length === 200 ? "+" : ""} session${shown.length === 1 ? "" : "s"}`
      : filtered ? "No session matches these filters." : "No sessions yet: start one with New session.";
  }

  async function load() {
    params.set("limit", "200");
    state.value ? params.set("state", state.value) : params.delete("state");
    model.value.trim() ? params.set("model", model.value.trim()) : params.delete("model");
    text.value.trim() ? params.set("q", text.value.trim()) : params.delete("q");
    byAnnotation.apply(params);
    const mine = ++asked;
    try {
      const page = await api(`/api/sessions?${params}`);
      if (stopped || mine !== asked) return;
      sessions = page.sessions;
      clearError();
      draw();
    } catch (error) {
      if (!stopped && mine === asked) showError(error);
    }
  }

  async function poll() {
    await load();
    if (!stopped) timer = setTimeout(poll, POLL_MS);
  }

  state.addEventListener("change", load);
  model.addEventListener("change", load);
  text.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(load, TYPING_MS);
  });
  const keys = (event) => {
    if (event.target.matches("input, select, textarea")) return;
    if (event.key !== "j" && event.key !== "k") return;
    const links = [...body.querySelectorAll("tr a")];
    if (!links.length) return;
    const at = links.indexOf(document.activeElement);
    const next = event.key === "j" ? Math.min(links.length - 1, at + 1) : Math.max(0, at - 1);
    links[next].focus();
    event.preventDefault();
  };
  document.addEventListener("keydown", keys);
  poll();
  return () => {
    stopped = true;
    clearTimeout(timer);
    clearTimeout(typing);
    document.removeEventListener("keydown", keys);
  };
}

function field(id, label, input, help) {
  return el("div", { class: "field" }, el("label", { for: id }, label), input,
    help ? el("p", { class: "muted small", id: `${id}-help` }, help) : null);
}

export function newSessionView({ main, showError, clearError, go }) {
  const task = el("textarea", { id: "n-task", name: "task", rows: 5, required: true, "aria-describedby": "n-task-help" });
  const model = el("input", { id: "n-model", name: "model", type: "text", autocomplete: "off", "aria-describedby": "n-model-help" });
  const runtime = el("select", { id: "n-runtime", name: "runtime" },
    el("option", { value: "" }, "server default"), el("option", { value: "local" }, "local (bubblewrap)"),
    el("option", { value: "docker" }, "docker"));
  const workspace = el("input", { id: "n-workspace", name: "workspace", type: "text", autocomplete: "off", "aria-describedby": "n-workspace-help" });
  const iterations = el("input", { id: "n-iterations", name: "max_iterations", type: "number", min: 1, max: 10000, inputmode: "numeric" });
  const budget = el("input", { id: "n-cost", name: "max_cost_usd", type: "number", min: 0, step: "0.01", inputmode: "decimal" });
  const submit = el("button", { type: "submit" }, "Start session");
  const form = el("form", { class: "card", "aria-labelledby": "new-title" },
    el("h1", { id: "new-title" }, "New session"),
    field("n-task", "Task", task, "What the agent should do, as you would tell a colleague."),
    field("n-model", "Model", model, "A litellm model name; empty: the server's model."),
    field("n-runtime", "Runtime", runtime),
    field("n-workspace", "Workspace", workspace, "Empty: a fresh directory. Else a directory under the server's workspace roots."),
    el("fieldset", {}, el("legend", {}, "Limits"),
      field("n-iterations", "Most steps", iterations), field("n-cost", "Most cost (USD)", budget)),
    submit);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    const body = { task: task.value, limits: {} };
    if (model.value.trim()) body.model = model.value.trim();
    if (runtime.value) body.runtime = runtime.value;
    if (workspace.value.trim()) body.workspace = workspace.value.trim();
    if (iterations.value) body.limits.max_iterations = Number(iterations.value);
    if (budget.value) body.limits.max_cost_usd = Number(budget.value);
    submit.disabled = true;
    try {
      const created = await api("/api/sessions", { method: "POST", body });
      go(`/sessions/${created.id}`);
    } catch (error) {
      showError(error);
      submit.disabled = false;
    }
  });
  clear(main).append(form);
  task.focus();
  return () => {};
}
