// The sessions list (live: polled while open; filters by state, model, words of the title or
// an id, evaluation run and task, start dates and annotations, all applied by the API; sorted
// by the API too; totals over every session the filters pass; replays and forks under their
// source, trials under their run) and the new-session form.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { age, cost, localTime, stateLabel } from "./format.js";
import { annotationFilters } from "./annotations.js";

const STATES = ["running", "interrupted", "awaiting_user_input", "paused", "stopped", "finished", "limit", "error"];
const POLL_MS = 3000;
// Longest a poll shows totals asked for earlier with the same filters.
const TOTALS_MS = 30000;
const TYPING_MS = 250; // the text filter asks the API once typing pauses

/** The rows in the list's order, each with its depth: a replay or fork under its source when
 * the source is listed, and an evaluation run's trials under a row of their run (at the place
 * of its newest trial). */
export function arrangeRows(sessions) {
  const byId = new Map(sessions.map((s) => [s.id, s]));
  const children = new Map();
  const runs = new Map(); // run -> its group item
  const roots = [];
  for (const s of sessions) {
    const source = s.replay_of || s.forked_from;
    if (source && byId.has(source)) {
      if (!children.has(source)) children.set(source, []);
      children.get(source).push(s);
    } else if (s.evaluation_run) {
      if (!runs.has(s.evaluation_run)) {
        const group = { run: s.evaluation_run, trials: [] };
        runs.set(s.evaluation_run, group);
        roots.push(group);
      }
      runs.get(s.evaluation_run).trials.push(s);
    } else roots.push(s);
  }
  const ordered = [];
  const visit = (s, depth) => {
    ordered.push({ session: s, depth });
    for (const child of children.get(s.id) || []) visit(child, depth + 1);
  };
  for (const root of roots) {
    if (root.trials) {
      ordered.push({ run: root.run, trials: root.trials, depth: 0 });
      root.trials.forEach((s) => visit(s, 1));
    } else visit(root, 0);
  }
  return ordered;
}

/** A replay says how it went, not that it stopped. */
const REPLAY_OUTCOMES = { matched: ["matched", "finished"], diverged: ["diverged", "error"], differed: ["requests differed", "paused"] };

function stateCell(s) {
  const outcome = s.replay_of && REPLAY_OUTCOMES[s.replay_outcome];
  if (outcome) return el("span", { class: `state state-${outcome[1]} replay-outcome` }, outcome[0]);
  return el("span", { class: `state state-${s.state || "starting"}` }, stateLabel(s.state));
}

function tokenCount(s) {
  return (s.input_tokens + s.output_tokens).toLocaleString();
}

function row({ session: s, depth }, go) {
  const open = () => go(`/sessions/${s.id}`);
  const branch = s.replay_of ? "replay" : s.forked_from ? "fork" : null;
  const trial = s.evaluation_run && s.task ? `${s.task} · epoch ${s.epoch ?? "?"}` : null;
  return el("tr", { class: depth ? `branch depth-${Math.min(depth, 4)}` : null, "data-id": s.id },
    el("td", { "data-label": "Session", class: "title-cell" },
      depth ? el("span", { class: "muted", "aria-hidden": "true" }, "↳ ") : null,
      branch ? el("span", { class: "tag" }, branch) : null,
      trial ? el("span", { class: "tag trial-tag" }, trial) : null,
      el("a", { href: `#/sessions/${s.id}`, onclick: (e) => { e.preventDefault(); open(); } }, s.title || s.id)),
    el("td", { "data-label": "State" }, stateCell(s)),
    el("td", { "data-label": "Model" }, s.model || ""),
    el("td", { "data-label": "Steps", class: "num" }, String(s.steps)),
    el("td", { "data-label": "Tokens", class: "num" }, tokenCount(s)),
    el("td", { "data-label": "Cost", class: "num" }, cost(s.cost_usd, s.unpriced_calls, s.model_calls)),
    el("td", { "data-label": "Age", class: "num" },
      el("time", { datetime: s.created_at, title: localTime(s.created_at) }, age(s.created_at))));
}

/** The row heading an evaluation run's trials: its name (to its report), how many are listed. */
function runRow({ run, trials }) {
  const sum = (key) => trials.reduce((total, s) => total + (s[key] || 0), 0);
  const known = trials.filter((s) => s.cost_usd !== null && s.cost_usd !== undefined);
  const usd = known.length ? known.reduce((total, s) => total + s.cost_usd, 0) : null;
  return el("tr", { class: "run-row", "data-run": run },
    el("td", { "data-label": "Run", colspan: 3 }, el("span", { class: "tag" }, "run"), " ",
      el("a", { href: `#/evaluations/${encodeURIComponent(run)}` }, run),
      el("span", { class: "muted small" }, ` · ${trials.length} trial${trials.length === 1 ? "" : "s"} listed`)),
    el("td", { "data-label": "Steps", class: "num" }, String(sum("steps"))),
    el("td", { "data-label": "Tokens", class: "num" }, (sum("input_tokens") + sum("output_tokens")).toLocaleString()),
    el("td", { "data-label": "Cost", class: "num" }, cost(usd, sum("unpriced_calls"), sum("model_calls"))),
    el("td", {}));
}

// The columns, and the order each sorts by (the API's sort): numbers largest first.
const COLUMNS = [
  ["Session", null], ["State", null], ["Model", null], ["Steps", "steps"], ["Tokens", "tokens"],
  ["Cost", "cost"], ["Age", "newest"],
];

/** A calendar day (the date field's value) as the start of that day in the viewer's zone. */
function dayStart(value, plusDays = 0) {
  const [y, m, d] = value.split("-").map(Number);
  return new Date(y, m - 1, d + plusDays).toISOString();
}

export function sessionsView({ main, showError, clearError, go }) {
  const params = new URLSearchParams();
  const state = el("select", { id: "f-state", name: "state" },
    el("option", { value: "" }, "any state"), STATES.map((s) => el("option", { value: s }, stateLabel(s))));
  const model = el("input", { id: "f-model", name: "model", type: "text", placeholder: "e.g. openai/gpt-4o", autocomplete: "off" });
  const text = el("input", { id: "f-text", name: "text", type: "search", placeholder: "words in the title, or an id", autocomplete: "off", "aria-describedby": "f-text-help" });
  const run = el("input", { id: "f-run", name: "run", type: "text", placeholder: "an evaluation run", autocomplete: "off" });
  const task = el("input", { id: "f-task", name: "task", type: "text", placeholder: "a task of the run", autocomplete: "off" });
  const from = el("input", { id: "f-from", name: "from", type: "date" });
  const to = el("input", { id: "f-to", name: "to", type: "date" });
  const byAnnotation = annotationFilters(() => load());
  const body = el("tbody");
  const status = el("p", { class: "muted", role: "status", "aria-live": "polite" }, "Loading sessions…");
  const totalsLine = el("p", { class: "totals small", id: "sessions-totals", "aria-live": "polite" });
  let sort = "newest";
  const headers = COLUMNS.map(([label, key]) => {
    if (!key) return el("th", { scope: "col" }, label);
    const button = el("button", { type: "button", class: "sort", "data-sort": key,
      title: key === "newest" ? "newest first; again: oldest first" : `largest ${label.toLowerCase()} first` }, label);
    button.addEventListener("click", () => {
      sort = key === "newest" && sort === "newest" ? "oldest" : key;
      load();
    });
    return el("th", { scope: "col", class: ["Steps", "Tokens", "Cost", "Age"].includes(label) ? "num" : null, "data-sort": key }, button);
  });
  const table = el("table", { class: "sessions session-list", "aria-describedby": "sessions-status" },
    el("caption", { class: "visually-hidden" }, "Your sessions"),
    el("thead", {}, el("tr", {}, headers)),
    body);
  status.id = "sessions-status";
  const filterCount = el("span", { class: "muted small filter-count" });
  const fields = el("form", { class: "filters", role: "search", "aria-label": "Filter sessions" },
    el("div", {}, el("label", { for: "f-state" }, "State"), state),
    el("div", {}, el("label", { for: "f-model" }, "Model"), model),
    el("div", {}, el("label", { for: "f-text" }, "Text"), text,
      el("p", { class: "visually-hidden", id: "f-text-help" }, "Sessions whose title has words beginning with each of these, or whose id begins with these hex digits")),
    el("div", {}, el("label", { for: "f-run" }, "Run"), run),
    el("div", {}, el("label", { for: "f-task" }, "Task"), task),
    el("div", {}, el("label", { for: "f-from" }, "Started from"), from),
    el("div", {}, el("label", { for: "f-to" }, "Started until"), to),
    byAnnotation.fields);
  fields.addEventListener("submit", (e) => e.preventDefault());
  // folded on a phone (the list first), open on a wider screen
  const filters = el("details", { class: "filters-fold", open: !window.matchMedia("(max-width: 640px)").matches },
    el("summary", {}, "Filters ", filterCount), fields);
  clear(main).append(
    el("div", { class: "heading" }, el("h1", {}, "Sessions"),
      el("a", { class: "button", href: "#/new" }, "New session")),
    filters, status, totalsLine, el("div", { class: "table-wrap" }, table),
    el("p", { class: "muted small" }, "Keys: j / k move between sessions, Enter opens one. Times are in your time zone."));

  let sessions = [];
  let timer = null;
  let typing = null;
  let stopped = false;
  let asked = 0; // the newest request's number: an older answer arriving late is dropped

  function activeFilters() {
    return [state.value, model.value.trim(), text.value.trim(), run.value.trim(), task.value.trim(), from.value, to.value]
      .filter(Boolean).length + (byAnnotation.active() ? 1 : 0);
  }

  function draw(totals) {
    const shown = sessions;
    const active = activeFilters();
    filterCount.textContent = active ? `(${active} in use)` : "";
    const focused = document.activeElement?.closest?.("tr")?.dataset.id;
    body.replaceChildren(...arrangeRows(shown).map((item) => (item.trials ? runRow(item) : row(item, go))));
    if (focused) body.querySelector(`tr[data-id="${focused}"] a`)?.focus();
    for (const th of table.querySelectorAll("th[data-sort]")) {
      const key = th.dataset.sort;
      const current = key === sort || (key === "newest" && sort === "oldest");
      th.setAttribute("aria-sort", current ? (sort === "oldest" ? "ascending" : "descending") : "none");
    }
    status.textContent = shown.length
      ? `${shown.length}${shown.length === 200 ? "+" : ""} session${shown.length === 1 ? "" : "s"} shown, ${sortWords[sort]}`
      : active ? "No session matches these filters." : "No sessions yet: start one with New session.";
    totalsLine.textContent = totals && totals.sessions
      ? `All ${totals.sessions.toLocaleString()} session${totals.sessions === 1 ? "" : "s"}${active ? " these filters pass" : ""}: ` +
        `${totals.model_calls.toLocaleString()} model calls · ${(totals.input_tokens + totals.output_tokens).toLocaleString()} tokens ` +
        `(${totals.input_tokens.toLocaleString()} in, ${totals.output_tokens.toLocaleString()} out) · ` +
        `${cost(totals.cost_usd, totals.unpriced_calls, totals.model_calls)}`
      : "";
  }

  // The totals sum every session the filters pass: asked for when the filters change, when
  // the rows shown changed since they were asked (a poll later), and else every TOTALS_MS,
  // not on each 3 s poll.
  let totals = null, totalsFor = null, totalsAt = 0, totalsRows = null;
  const rowsNow = () => sessions.map((s) => `${s.id}:${s.updated_at}:${s.events}`).join();

  async function load() {
    params.set("limit", "200");
    params.delete("totals");
    const words = text.value.trim();
    const asId = /^[0-9a-fA-F]{8}(-[0-9a-fA-F-]{0,27})?$/.test(words); // an id, or its first 8+
    const set = (name, value) => (value ? params.set(name, value) : params.delete(name));
    set("state", state.value);
    set("model", model.value.trim());
    set("q", asId ? "" : words);
    set("id_prefix", asId ? words : "");
    set("run", run.value.trim());
    set("task", task.value.trim());
    set("since", from.value ? dayStart(from.value) : "");
    set("until", to.value ? dayStart(to.value, 1) : "");
    set("sort", sort === "newest" ? "" : sort);
    byAnnotation.apply(params);
    const filtersNow = params.toString();
    const askTotals = filtersNow !== totalsFor || totalsRows !== rowsNow()
      || Date.now() - totalsAt > TOTALS_MS;
    if (askTotals) params.set("totals", "true");
    const mine = ++asked;
    try {
      const page = await api(`/api/sessions?${params}`);
      if (stopped || mine !== asked) return;
      sessions = page.sessions;
      if (askTotals) [totals, totalsFor, totalsAt, totalsRows] = [page.totals, filtersNow, Date.now(), rowsNow()];
      clearError();
      draw(totals);
    } catch (error) {
      if (!stopped && mine === asked) showError(error);
    }
  }

  async function poll() {
    await load();
    if (!stopped) timer = setTimeout(poll, POLL_MS);
  }

  for (const input of [state, model, run, task, from, to]) input.addEventListener("change", load);
  text.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(load, TYPING_MS);
  });
  const keys = (event) => {
    if (event.target.matches("input, select, textarea")) return;
    if (event.key !== "j" && event.key !== "k") return;
    const links = [...body.querySelectorAll("tr[data-id] a")];
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

const sortWords = {
  newest: "newest first", oldest: "oldest first", cost: "dearest first", tokens: "most tokens first", steps: "most steps first",
};

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
