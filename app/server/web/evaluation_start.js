// Starting an evaluation run from the page (POST /api/evaluations): the suite as YAML (the
// file chronicle eval run takes: pasted, uploaded, or an earlier run's), the model, epochs and
// concurrency; each problem the server finds in the suite is listed at the form with its line
// (a click selects that line). Then the run's progress, polled until its report is whole.

import { api } from "./api.js";
import { el, clear } from "./dom.js";

const TASK_ID = "[A-Za-z0-9][A-Za-z0-9._\\-]{0,99}";
const EXAMPLE = `name: smoke
tasks:
  - id: hello
    prompt: Make hello.py print "hello chronicle".
    files: {hello.py: "print('hi')\\n"}
    check: python3 hello.py | grep -qx 'hello chronicle'
  - id: answer
    prompt: What is 6 x 7? Say it with finish.
    answer: "regex:\\\\b42\\\\b"
`;

function field(id, label, input, help) {
  return el("div", { class: "field" }, el("label", { for: id }, label), input,
    help ? el("p", { class: "muted small", id: `${id}-help` }, help) : null);
}

/** Select line ``line`` of the textarea (1-based), so the problem named there is in view. */
function selectLine(textarea, line) {
  const lines = textarea.value.split("\n");
  const start = lines.slice(0, line - 1).reduce((n, text) => n + text.length + 1, 0);
  textarea.focus();
  textarea.setSelectionRange(start, start + (lines[line - 1] || "").length);
}

/** The form; ``runs`` are the runs listed (an API run's suite can be started again). */
export function startForm({ showError, clearError, go }, runs, { open = false } = {}) {
  const name = el("input", { id: "s-name", name: "name", type: "text", required: true, pattern: TASK_ID, autocomplete: "off",
    "aria-describedby": "s-name-help" });
  const suite = el("textarea", { id: "s-suite", name: "suite", rows: 12, required: true, spellcheck: "false", wrap: "off",
    class: "code-input", placeholder: EXAMPLE, "aria-describedby": "s-suite-help s-problems" });
  const file = el("input", { id: "s-file", type: "file", accept: ".yaml,.yml,text/yaml,text/plain" });
  const earlier = runs; // a command-line run's suite is the tasks its trials recorded
  const from = el("select", { id: "s-from" }, el("option", { value: "" }, "—"),
    earlier.map((run) => el("option", { value: run.key }, `${run.name}${run.model ? ` (${run.model})` : ""}`)));
  const model = el("input", { id: "s-model", name: "model", type: "text", autocomplete: "off", list: "s-models",
    placeholder: "the server's model" });
  const models = el("datalist", { id: "s-models" }, [...new Set(runs.map((run) => run.model).filter(Boolean))].map((m) => el("option", { value: m })));
  const epochs = el("input", { id: "s-epochs", name: "trials", type: "number", min: 1, max: 100, step: 1, value: 1, required: true });
  const concurrency = el("input", { id: "s-concurrency", name: "concurrency", type: "number", min: 1, max: 100, step: 1, value: 1, required: true });
  const problems = el("ul", { id: "s-problems", class: "suite-problems", role: "alert", hidden: true });
  const submit = el("button", { type: "submit" }, "Start the run");
  const form = el("form", { class: "start-form", "aria-label": "Start a run" },
    el("p", { class: "muted small" }, "Every task × epoch runs as a recorded session of yours, scored when it ends; the run is yours to read and compare. The suite is the YAML ",
      el("code", {}, "chronicle eval run"), " takes (this server refuses ", el("code", {}, "setup"), " and agent commands: they would run outside any sandbox)."),
    field("s-name", "Run name", name, "Letters, digits, . _ -; unique among your runs."),
    el("div", { class: "suite-sources" },
      field("s-file", "Upload a suite file", file),
      earlier.length ? field("s-from", "Or start from an earlier run's suite", from) : null),
    field("s-suite", "Suite (YAML)", suite, "Paste it, or upload a file above."),
    problems,
    el("div", { class: "start-numbers" },
      field("s-model", "Model", model), models,
      field("s-epochs", "Epochs", epochs),
      field("s-concurrency", "Concurrency", concurrency)),
    el("div", { class: "actions" }, submit));

  const showProblems = (list) => {
    clear(problems).append(...list.map((p) => {
      const where = p.where || (p.key ? `field '${p.key}'` : "");
      const text = `${where ? `${where}: ` : ""}${p.message}`;
      return el("li", {}, p.line
        ? el("button", { type: "button", class: "line-link", onclick: () => selectLine(suite, p.line) }, `Line ${p.line}${p.column ? `, column ${p.column}` : ""}`)
        : null, p.line ? ": " : "", text);
    }));
    problems.hidden = !list.length;
  };
  file.addEventListener("change", async () => {
    const chosen = file.files[0];
    if (!chosen) return;
    suite.value = await chosen.text();
    showProblems([]);
  });
  from.addEventListener("change", async () => {
    if (!from.value) return;
    try {
      const found = await api(`/api/evaluations/${encodeURIComponent(from.value)}/suite`);
      suite.value = found.suite;
      const picked = earlier.find((run) => run.key === from.value);
      if (picked && !model.value) model.value = picked.model || "";
      showProblems([]);
    } catch (error) {
      showError(error);
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    showProblems([]);
    const body = { name: name.value.trim(), suite: suite.value, trials: Number(epochs.value), concurrency: Number(concurrency.value) };
    if (model.value.trim()) body.model = model.value.trim();
    submit.disabled = true;
    submit.textContent = "Starting…";
    try {
      const run = await api("/api/evaluations", { method: "POST", body });
      go(`/evaluations/${encodeURIComponent(run.key)}`);
    } catch (error) {
      if (error.errors && error.errors.length) showProblems(error.errors);
      else showProblems([{ message: error.message }]);
      problems.scrollIntoView({ block: "nearest" });
    } finally {
      submit.disabled = false;
      submit.textContent = "Start the run";
    }
  });
  return el("details", { class: "card start-run", open },
    el("summary", {}, el("h2", {}, "Start a run")), form);
}

/** A run's progress while it runs: trials done, running and left, as words and a bar. */
export function progressView(run) {
  const done = run.done;
  const running = Math.max(0, run.started - run.done);
  const left = Math.max(0, run.total - run.started);
  const state = run.status === "stopped" ? `stopped: ${run.reason || "a trial ended on a configuration error"}` : run.status;
  return el("section", { class: "summary run-progress", "aria-labelledby": "progress-title" },
    el("div", { class: "heading" }, el("h2", { id: "progress-title" }, `Run ${run.name}`),
      el("span", { class: `state state-${run.status === "stopped" ? "error" : "running"}` }, state)),
    el("progress", { max: run.total || 1, value: done, "aria-label": `${done} of ${run.total} trials done` }),
    el("p", { class: "progress-counts", role: "status", "aria-live": "polite" },
      `${done} done (${run.passed} passed, ${run.failed} failed) · ${running} ${run.status === "queued" ? "waiting for a worker" : "running"} · `,
      `${left} left · ${run.total} in all`,
      run.model ? ` · ${run.model}` : ""));
}
