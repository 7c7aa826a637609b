// Evaluation (a member reads the runs they started, an admin every run): the runs with their
// pass rates and intervals and a form to start one (evaluation_start.js), a run's progress and
// report (pass rate with its 95% interval, pass@k, the sections chronicle eval report prints,
// the per-task and per-trial tables, steps and cost per task drawn as SVG bars), and two runs
// compared as a flip table, each task opening the two runs' trials side by side
// (evaluation_pair.js).

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { UNKNOWN_COST, cost, duration, localTime } from "./format.js";
import { progressView, startForm } from "./evaluation_start.js";
import { verdictBadge } from "./trial.js";

const PROGRESS_EVERY_MS = 1000;

const SVG = "http://www.w3.org/2000/svg";

export function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  for (const child of children.flat()) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function percent(value) {
  return `${(value * 100).toFixed(1)}%`;
}

/** The pass rate as a bar on 0-100% with its interval as a whisker. */
function rateChart(report) {
  const width = 300;
  const x = (v) => 10 + v * (width - 20);
  return svg("svg", { viewBox: `0 0 ${width} 40`, class: "chart rate", role: "img",
    "aria-label": `pass rate ${percent(report.pass_rate)}, 95% interval ${percent(report.interval.low)} to ${percent(report.interval.high)}` },
  svg("rect", { x: 10, y: 12, width: width - 20, height: 14, class: "track" }),
  svg("rect", { x: 10, y: 12, width: Math.max(0, x(report.pass_rate) - 10), height: 14, class: "bar" }),
  svg("line", { x1: x(report.interval.low), x2: x(report.interval.high), y1: 19, y2: 19, class: "whisker" }),
  svg("line", { x1: x(report.interval.low), x2: x(report.interval.low), y1: 10, y2: 28, class: "whisker" }),
  svg("line", { x1: x(report.interval.high), x2: x(report.interval.high), y1: 10, y2: 28, class: "whisker" }));
}

/** One horizontal bar per task (steps or cost); a chart with nothing to draw says so. */
export function barChart(label, rows, value, text, empty = "nothing to draw") {
  if (!rows.some((row) => value(row) > 0)) {
    return el("figure", { class: "chart-figure" }, el("figcaption", {}, label),
      el("p", { class: "muted small chart-empty", role: "note" }, empty));
  }
  const max = Math.max(1e-9, ...rows.map(value));
  const height = 22 * rows.length + 6;
  return el("figure", { class: "chart-figure" }, el("figcaption", {}, label),
    svg("svg", { viewBox: `0 0 400 ${height}`, class: "chart bars", role: "img", "aria-label": label },
      rows.map((row, i) => svg("g", { transform: `translate(0 ${i * 22 + 3})` },
        svg("text", { x: 0, y: 14, class: "axis" }, row.id.length > 18 ? row.id.slice(0, 17) + "…" : row.id),
        svg("rect", { x: 130, y: 3, height: 14, width: Math.max(1, (value(row) / max) * 200), class: "bar" }),
        svg("text", { x: 336, y: 14, class: "axis" }, text(row))))));
}

/** A pass rate's interval as a small whisker on 0-100% (for the runs table). */
function intervalChart(rate, interval) {
  const x = (v) => 4 + v * 112;
  return svg("svg", { viewBox: "0 0 120 16", class: "chart interval", role: "img",
    "aria-label": `${percent(rate)}, 95% interval ${percent(interval.low)} to ${percent(interval.high)}` },
  svg("rect", { x: 4, y: 6, width: 112, height: 4, class: "track" }),
  svg("line", { x1: x(interval.low), x2: x(interval.high), y1: 8, y2: 8, class: "whisker" }),
  svg("circle", { cx: x(rate), cy: 8, r: 3.5, class: "dot" }));
}

/** A table's header row: a numeric column's header is right-aligned as its numbers are. */
function headers(columns, numeric = []) {
  return el("thead", {}, el("tr", {}, columns.map((h) => el("th", { scope: "col", class: numeric.includes(h) ? "num" : null }, h))));
}

function interval(i) {
  return `${percent(i.low)}–${percent(i.high)}`;
}

function signedPercent(value) {
  return `${value > 0 ? "+" : value < 0 ? "−" : "±"}${(Math.abs(value) * 100).toFixed(1)}%`;
}

const Z95 = 1.959963984540054; // the normal quantile of a 95% interval

/** Wilson's score interval of ``passed`` out of ``trials``, as the reports compute it
 * (app/evaluation/statistics.py): 0 trials know nothing, [0, 1]. */
export function wilson(passed, trials) {
  if (!trials) return { low: 0, high: 1 };
  const p = passed / trials;
  const denominator = 1 + (Z95 * Z95) / trials;
  const centre = (p + (Z95 * Z95) / (2 * trials)) / denominator;
  const half = (Z95 * Math.sqrt((p * (1 - p)) / trials + (Z95 * Z95) / (4 * trials * trials))) / denominator;
  return { low: passed === 0 ? 0 : Math.max(0, centre - half), high: passed === trials ? 1 : Math.min(1, centre + half) };
}

/** Every run, newest first, with its pass rate and interval; pick two to compare. */
function runsTable(runs, go) {
  const picked = [];  // run keys: a name is its owner's, and an admin sees several owners' runs
  const names = new Map(runs.map((run) => [run.key || run.name, run.name]));
  const compare = el("button", { type: "button", disabled: true }, "Compare the two picked runs");
  const hint = el("span", { class: "muted small", role: "status", "aria-live": "polite" }, "Pick two runs: A first, then B.");
  const update = () => {
    compare.disabled = picked.length !== 2;
    const [a, b] = picked.map((key) => names.get(key));
    hint.textContent = picked.length === 2 ? `A ${a} · B ${b}` : picked.length === 1 ? `A ${a}; pick B.` : "Pick two runs: A first, then B.";
  };
  compare.addEventListener("click", () => go(`/evaluations/${encodeURIComponent(picked[0])}/vs/${encodeURIComponent(picked[1])}`));
  const rows = runs.map((run) => {
    const r = { ...run, run: run.name, key: run.key || run.name };
    const rate = r.done ? r.passed / r.done : 0;
    const ci = wilson(r.passed, r.done);
    const box = el("input", { type: "checkbox", class: "pick", "data-key": r.key, "aria-label": `pick ${r.run} to compare` });
    box.addEventListener("change", () => {
      const at = picked.indexOf(r.key);
      if (box.checked && at < 0) picked.push(r.key);
      if (!box.checked && at >= 0) picked.splice(at, 1);
      while (picked.length > 2) {
        const dropped = picked.shift();
        for (const other of document.querySelectorAll("input.pick")) {
          if (other.dataset.key === dropped) other.checked = false;
        }
      }
      update();
    });
    return el("tr", { "data-run": r.run },
      el("td", { "data-label": "Compare" }, box),
      el("td", { "data-label": "Run" }, el("a", { href: `#/evaluations/${encodeURIComponent(r.key)}` }, r.run),
        r.user ? el("span", { class: "muted small run-user" }, ` by ${r.user}`) : ""),
      el("td", { "data-label": "Status" }, el("span", { class: `state state-${r.status === "finished" ? "finished" : "running"}` }, r.status),
        r.status === "finished" ? "" : ` ${r.done} of ${r.total} scored`),
      el("td", { "data-label": "Model" }, r.model || ""),
      el("td", { "data-label": "Pass rate", class: "num pass-rate-cell" }, r.done ? `${percent(rate)} (${r.passed} of ${r.done})` : "–"),
      el("td", { "data-label": "95% interval", class: "num" }, r.done ? [intervalChart(rate, ci), " ", interval(ci)] : "–"),
      el("td", { "data-label": "Started", class: "num" }, r.created_at ? el("time", { datetime: r.created_at, title: localTime(r.created_at) }, localTime(r.created_at)) : ""));
  });
  return el("section", { class: "runs", "aria-labelledby": "runs-title" },
    el("h2", { id: "runs-title" }, "Runs"),
    el("div", { class: "table-wrap" }, el("table", { class: "sessions runs-table" },
      el("caption", { class: "visually-hidden" }, "Evaluation runs with their pass rates"),
      headers(["Compare", "Run", "Status", "Model", "Pass rate", "95% interval", "Started"], ["Pass rate", "95% interval", "Started"]),
      el("tbody", {}, rows))),
    el("div", { class: "controls" }, compare, hint));
}

function money(usd, digits = 4) {
  return usd === null || usd === undefined ? UNKNOWN_COST : `$${Number(usd).toFixed(digits)}`;
}

/** The sections chronicle eval report prints after its table (report_text.section_facts):
 * endings, tokens, cost, steps, wall time, model latency, tool errors, resumes, replays. */
function sectionFacts(report) {
  const usage = report.usage;
  const unpriced = report.unpriced_sessions ? ` (${report.unpriced_sessions} sessions unpriced)` : "";
  const rows = [
    ["Endings", Object.entries(report.endings || {}).map(([ending, n]) => `${ending} ${n}`).join(", ") || "–"],
  ];
  if (usage) {
    rows.push(
      ["Tokens", `${usage.input_tokens.toLocaleString()} in, ${usage.output_tokens.toLocaleString()} out (${usage.model_calls} model call${usage.model_calls === 1 ? "" : "s"})`],
      ["Cost", `${money(usage.cost_usd)}${unpriced}, per passed trial ${money(usage.cost_per_passed)}`],
      ["Steps", `${usage.steps} (mean ${Number(usage.mean_steps).toFixed(2)})`],
      ["Wall time", `${duration(Number(usage.wall_seconds) * 1000)} (mean ${duration(Number(usage.mean_wall_seconds) * 1000)})`]);
  }
  rows.push(["Model latency", report.latency
    ? `p50 ${duration(Number(report.latency.p50_ms))}, p95 ${duration(Number(report.latency.p95_ms))} (${report.latency.model_calls} calls made)`
    : "no model call was made"]);
  const tools = report.tool_errors;
  rows.push(["Tool errors", tools
    ? `${tools.failed} of ${tools.tool_calls}${tools.error_rate === null ? "" : ` (${percent(Number(tools.error_rate))})`}`
    : "no tool was called"]);
  if (report.resumes) rows.push(["Resumed", `${report.resumes} times, ${report.rerun_sessions} interrupted sessions run again`]);
  if (report.replays && report.replays.length) {
    const matched = report.replays.filter((r) => r.matched).length;
    const stopped = report.replays.filter((r) => r.divergence_kind === "redacted").length;
    rows.push(["Replays", `${matched} of ${report.replays.length} matched${stopped ? `, ${stopped} stopped at a redacted part` : ""}`]);
  }
  return el("section", { class: "report-sections", "aria-labelledby": "sections-title" },
    el("h2", { id: "sections-title" }, "How the trials went"),
    el("dl", { class: "facts report-facts" }, rows.map(([name, value]) => [el("dt", {}, name), el("dd", { "data-fact": name }, value)])));
}

/** Every trial (task × epoch): its verdict, how it ended, steps, cost, why it failed, and
 * its session. */
function trialsTable(report) {
  const rows = [...report.tasks].sort((a, b) => a.id.localeCompare(b.id) || a.epoch - b.epoch);
  return el("section", { "aria-labelledby": "trials-title" },
    el("h2", { id: "trials-title" }, "Trials"),
    el("div", { class: "table-wrap" }, el("table", { class: "sessions trials" },
      el("caption", { class: "visually-hidden" }, "Each trial with its verdict and, when it failed, why"),
      headers(["Task", "Epoch", "Verdict", "Ended", "Steps", "Cost", "Why it failed", "Session"], ["Epoch", "Steps", "Cost"]),
      el("tbody", {}, rows.map((t) => el("tr", { "data-task": t.id, "data-epoch": t.epoch, class: t.passed ? "passed" : "failed" },
        el("td", { "data-label": "Task" }, t.id),
        el("td", { "data-label": "Epoch", class: "num" }, String(t.epoch)),
        el("td", { "data-label": "Verdict" }, verdictBadge(t.passed || (t.reason === "not scored" ? null : false))),
        el("td", { "data-label": "Ended" }, t.ending || t.status || "–"),
        el("td", { "data-label": "Steps", class: "num" }, String(t.steps)),
        el("td", { "data-label": "Cost", class: "num" }, money(t.cost_usd)),
        el("td", { "data-label": "Why it failed", class: "reason" }, t.reason || ""),
        el("td", { "data-label": "Session" }, el("a", { href: `#/sessions/${t.session_id}`, "aria-label": `session of ${t.id} epoch ${t.epoch}` },
          String(t.session_id).slice(0, 8)))))))));
}

/** The trials counted apart (erased, or redacted where they are judged or replayed), with
 * why: in neither the pass rate nor the failures (report_text.excluded_lines). */
function notCounted(report) {
  const excluded = report.excluded || [];
  if (!excluded.length) return null;
  const kinds = [["erased", report.erased], ["redacted", report.redacted]].filter(([, n]) => n).map(([kind, n]) => `${n} ${kind}`);
  return el("details", { class: "not-counted" },
    el("summary", {}, `Not counted: ${kinds.join(", ")} (in neither the pass rate nor the failures: nothing says whether they passed)`),
    el("ul", { class: "small" }, excluded.map((t) => el("li", { "data-kind": t.kind },
      t.task_id ? `${t.task_id} epoch ${t.epoch}` : "A trial", ` (${t.kind}, session `,
      t.kind === "erased" ? String(t.session_id).slice(0, 8) : el("a", { href: `#/sessions/${t.session_id}` }, String(t.session_id).slice(0, 8)),
      `): ${t.note}`))));
}

/** A run's report: the pass rate, the sections, the per-task and per-trial tables, charts. */
function reportView(report) {
  const tasks = report.task_table;
  return [
    el("section", { class: "summary", "aria-labelledby": "report-title" },
      el("h2", { id: "report-title", title: report.run }, `Run ${report.run.split("@")[0]}`),
      el("p", { class: "big" }, el("strong", { class: "pass-rate" }, percent(report.pass_rate)),
        ` passed (${report.passed} of ${report.total}) · 95% interval ${percent(report.interval.low)}–${percent(report.interval.high)}`),
      rateChart(report),
      notCounted(report),
      el("p", { class: "muted small" },
        `${report.epochs} epoch${report.epochs === 1 ? "" : "s"} · pass@${report.epochs} ${percent(report.pass_at_k)} · pass^${report.epochs} ${percent(report.pass_hat_k)} · `,
        `${report.steps} steps · ${cost(report.cost_usd === null ? null : Number(report.cost_usd), report.unpriced_sessions, report.total)}`)),
    sectionFacts(report),
    el("h2", {}, "Tasks"),
    el("div", { class: "table-wrap" }, el("table", { class: "sessions tasks" },
      headers(["Task", "Passed", "Steps", "Cost", "Sessions"], ["Passed", "Steps", "Cost"]),
      el("tbody", {}, tasks.map((t) => el("tr", {},
        el("td", { "data-label": "Task" }, t.id),
        el("td", { "data-label": "Passed", class: "num" }, `${t.passed} / ${t.epochs}`),
        el("td", { "data-label": "Steps", class: "num" }, String(t.steps)),
        el("td", { "data-label": "Cost", class: "num" }, money(t.cost_usd)),
        el("td", { "data-label": "Sessions" }, t.session_ids.map((id, i) =>
          el("a", { href: `#/sessions/${id}`, class: "session-link", "aria-label": `session ${i + 1} of task ${t.id}` }, `#${i + 1}`)))))))),
    trialsTable(report),
    el("div", { class: "charts" },
      barChart("Steps per task", tasks, (t) => t.steps, (t) => String(t.steps), "No steps to draw: no trial took an action."),
      barChart("Cost per task (USD)", tasks, (t) => Number(t.cost_usd || 0), (t) => money(t.cost_usd),
        tasks.some((t) => t.cost_usd !== null) ? "No cost to draw: every trial cost $0." : "No cost to draw: no model call had a known price.")),
  ];
}

/** The runs (#/evaluations) with the form to start one, or one run (#/evaluations/RUN): its
 * progress while it runs (polled), and its report as its trials are scored. */
export function evaluationView(context, run) {
  const { main, showError, clearError, go } = context;
  const name = el("input", { id: "e-run", name: "run", type: "text", required: true, value: run || "", autocomplete: "off" });
  const form = el("form", { class: "filters single", role: "search", "aria-label": "Find a report" },
    el("div", {}, el("label", { for: "e-run" }, "Evaluation run"), name),
    el("div", { class: "align-end" }, el("button", { type: "submit" }, "Open report")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    go(`/evaluations/${encodeURIComponent(name.value.trim())}`);
  });
  const body = el("div", { class: "report" });
  clear(main).append(...[
    run ? el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, el("a", { href: "#/evaluations" }, "Evaluation"), " / ", el("span", {}, run.split("@")[0])) : null,
    el("h1", {}, "Evaluation"),
    run ? null : el("p", { class: "muted" }, "The runs you started here or through the API (", el("code", {}, "POST /api/evaluations"), ") are yours to read; one started with ",
      el("code", {}, "chronicle eval run"), " belongs to no user, so only an admin reads it."),
    run ? null : form, body].filter(Boolean));
  let closed = false;
  let timer = null;
  if (!run) {
    body.append(el("p", { class: "muted", role: "status" }, "Loading the runs…"));
    api("/api/evaluations").then((found) => {
      if (closed) return;
      const runs = Array.isArray(found) ? found : found.runs || [];
      clear(body).append(startForm(context, runs, { open: !runs.length }),
        runs.length ? runsTable(runs, go) : el("p", { class: "muted" }, "No evaluation run yet: start one above."));
    }).catch((error) => {
      if (closed) return;
      clear(body);
      if (error.status === 404) body.append(el("p", { class: "muted" }, "This server does not list runs; open one by its name."));
      else showError(error);
    });
    return () => { closed = true; };
  }
  body.append(el("p", { class: "muted", role: "status" }, "Loading the report…"));
  const progressSlot = el("div");
  const reportSlot = el("div");
  let reportedDone = -1;

  async function refresh() {
    timer = null;
    let progress = null;
    try {
      progress = await api(`/api/evaluations/${encodeURIComponent(run)}`);
    } catch (error) {
      if (closed) return;
      clear(body);
      showError(error);
      return;
    }
    if (closed) return;
    if (!body.contains(progressSlot)) clear(body).append(progressSlot, reportSlot);
    const running = progress.status === "queued" || progress.status === "running";
    if (progress.status === "finished") clear(progressSlot);
    else progressSlot.replaceChildren(progressView(progress));
    if (progress.done !== reportedDone && (progress.done > 0 || !running)) {
      try {
        const report = await api(`/api/evaluations/${encodeURIComponent(run)}/report`);
        if (closed) return;
        clearError();
        reportedDone = progress.done;
        reportSlot.replaceChildren(...reportView(report));
      } catch (error) {
        if (closed) return;
        if (!running) showError(error);
      }
    }
    if (running) timer = setTimeout(refresh, PROGRESS_EVERY_MS);
  }
  refresh();
  return () => {
    closed = true;
    clearTimeout(timer);
  };
}

const FLIPS = [
  ["regressed", "regressed", "passed", "failed"],
  ["newly_passing", "newly passing", "failed", "passed"],
  ["both", "passed in both", "passed", "passed"],
  ["neither", "failed in both", "failed", "failed"],
  ["only_a", "only in A", "passed or failed", "not run"],
  ["only_b", "only in B", "not run", "passed or failed"],
];

function sessionsOf(report) {
  const found = new Map();
  for (const task of report?.task_table || []) found.set(task.id, task);
  return found;
}

function outcomeCell(label, task, which) {
  const links = (task?.session_ids || []).map((id, i) =>
    el("a", { href: `#/sessions/${id}`, class: "session-link", "aria-label": `session ${i + 1} of ${task.id} in run ${which}` }, `#${i + 1}`));
  const passed = label === "passed";
  return el("td", { "data-label": `Run ${which}`, class: label === "not run" ? "muted" : passed ? "pass" : "fail" },
    label === "not run" ? "not run" : `${passed ? "✓" : "✗"} ${label}`, task ? ` ${task.passed} / ${task.epochs} ` : "", links);
}

/** Two runs compared (#/evaluations/A/vs/B): both pass rates with their intervals, B − A with
 * its interval, the cost and step deltas, and the flip table task by task. */
export function comparisonView({ main, showError, clearError }, a, b) {
  const body = el("div", { class: "report" }, el("p", { class: "muted", role: "status" }, "Comparing…"));
  clear(main).append(
    el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, el("a", { href: "#/evaluations" }, "Evaluation"), " / ",
      el("a", { href: `#/evaluations/${encodeURIComponent(a)}` }, a), " vs ",
      el("a", { href: `#/evaluations/${encodeURIComponent(b)}` }, b)),
    el("h1", {}, `Compare ${a} (A) with ${b} (B)`), body);
  let closed = false;
  const reports = Promise.all([a, b].map((run) =>
    api(`/api/evaluations/${encodeURIComponent(run)}/report`).catch(() => null)));
  Promise.all([api(`/api/evaluations/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`), reports]).then(([c, [ra, rb]]) => {
    if (closed) return;
    clearError();
    const inA = sessionsOf(ra);
    const inB = sessionsOf(rb);
    const rows = FLIPS.flatMap(([key, change, left, right]) => (c[key] || []).map((task) =>
      el("tr", { class: `flip ${key}`, "data-task": task },
        el("td", { "data-label": "Task" }, task, key.startsWith("only_") ? "" : [" ",
          el("a", { href: `#/evaluations/${encodeURIComponent(a)}/vs/${encodeURIComponent(b)}/tasks/${encodeURIComponent(task)}`,
            class: "small side-by-side-link", "aria-label": `${task} side by side` }, "side by side")]),
        outcomeCell(left === "passed or failed" ? (inA.get(task) && 2 * inA.get(task).passed > inA.get(task).epochs ? "passed" : "failed") : left, inA.get(task), "A"),
        outcomeCell(right === "passed or failed" ? (inB.get(task) && 2 * inB.get(task).passed > inB.get(task).epochs ? "passed" : "failed") : right, inB.get(task), "B"),
        el("td", { "data-label": "Change" }, el("span", { class: `flip-tag ${key}` }, change)))));
    const count = (key) => (c[key] || []).length;
    const signedMoney = (v) => v === null || v === undefined ? "–" : `${Number(v) >= 0 ? "+" : "−"}$${Math.abs(Number(v)).toFixed(4)}`;
    clear(body).append(
      el("section", { class: "summary", "aria-labelledby": "compare-rates" },
        el("h2", { id: "compare-rates" }, "Pass rates"),
        el("p", {}, el("strong", {}, "A "), `${c.run_a}: `, el("strong", { class: "rate-a" }, percent(c.pass_rate_a)), ` (95% interval ${interval(c.interval_a)}) `, intervalChart(c.pass_rate_a, c.interval_a)),
        el("p", {}, el("strong", {}, "B "), `${c.run_b}: `, el("strong", { class: "rate-b" }, percent(c.pass_rate_b)), ` (95% interval ${interval(c.interval_b)}) `, intervalChart(c.pass_rate_b, c.interval_b)),
        el("p", { class: "big" }, "B − A: ", el("strong", { class: "difference" }, signedPercent(c.difference)),
          ` (95% interval ${signedPercent(c.difference_interval.low)} to ${signedPercent(c.difference_interval.high)})`),
        el("p", { class: "muted small" }, `cost ${signedMoney(c.cost_delta_usd)} · steps ${c.steps_delta >= 0 ? "+" : ""}${c.steps_delta}`,
          c.mean_steps_delta === null || c.mean_steps_delta === undefined ? ""
            : ` · per trial: cost ${signedMoney(c.mean_cost_delta_usd)}, steps ${Number(c.mean_steps_delta) >= 0 ? "+" : "−"}${Math.abs(Number(c.mean_steps_delta)).toFixed(2)}`,
          c.replays ? ` · ${c.diverged.length} of ${c.replays} replays diverged` : "")),
      el("h2", {}, "Flip table"),
      el("p", { class: "muted small flip-counts" }, `${count("regressed")} regressed · ${count("newly_passing")} newly passing · ${count("both")} passed in both · ${count("neither")} failed in both`,
        count("only_a") || count("only_b") ? ` · ${count("only_a")} only in A · ${count("only_b")} only in B` : ""),
      el("div", { class: "table-wrap" }, el("table", { class: "sessions flips" },
        el("caption", { class: "visually-hidden" }, "Each task's outcome in run A and run B"),
        headers(["Task", `A ${c.run_a}`, `B ${c.run_b}`, "Change"]),
        el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 4 }, "The runs have no task in common."))))));
  }).catch((error) => {
    if (closed) return;
    clear(body);
    showError(error);
  });
  return () => { closed = true; };
}
