// Evaluation (a member reads the runs they started, an admin every run): the runs with their pass rates and
// intervals, a run's report (pass rate with its 95% interval, pass@k, the per-task table
// linking each session, steps and cost per task drawn as SVG bars), and two runs compared as
// a flip table.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { UNKNOWN_COST, cost, localTime } from "./format.js";

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

/** One horizontal bar per task (steps or cost). */
export function barChart(label, rows, value, text) {
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
      el("thead", {}, el("tr", {}, ["Compare", "Run", "Status", "Model", "Pass rate", "95% interval", "Started"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows))),
    el("div", { class: "controls" }, compare, hint));
}

export function evaluationView({ main, showError, clearError, go }, run) {
  const name = el("input", { id: "e-run", name: "run", type: "text", required: true, value: run || "", autocomplete: "off" });
  const form = el("form", { class: "filters single", role: "search", "aria-label": "Find a report" },
    el("div", {}, el("label", { for: "e-run" }, "Evaluation run"), name),
    el("div", { class: "align-end" }, el("button", { type: "submit" }, "Open report")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    go(`/evaluations/${encodeURIComponent(name.value.trim())}`);
  });
  const body = el("div", { class: "report" });
  clear(main).append(el("h1", {}, "Evaluation"),
    el("p", { class: "muted" }, "A run started through the API (", el("code", {}, "POST /api/evaluations"), ") is read by whoever started it; one started with ",
      el("code", {}, "chronicle eval run"), " belongs to no user, so only an admin reads it."),
    form, body);
  let closed = false;
  if (!run) {
    body.append(el("p", { class: "muted", role: "status" }, "Loading the runs…"));
    api("/api/evaluations").then((found) => {
      if (closed) return;
      const runs = Array.isArray(found) ? found : found.runs || [];
      clear(body).append(runs.length ? runsTable(runs, go)
        : el("p", { class: "muted" }, "No evaluation run yet: start one with ", el("code", {}, "chronicle eval run SUITE"), "."));
    }).catch((error) => {
      if (closed) return;
      clear(body);
      if (error.status === 404) body.append(el("p", { class: "muted" }, "This server does not list runs; open one by its name."));
      else showError(error);
    });
    return () => { closed = true; };
  }
  body.append(el("p", { class: "muted", role: "status" }, "Loading the report…"));
  api(`/api/evaluations/${encodeURIComponent(run)}/report`).then((report) => {
    if (closed) return;
    clearError();
    const tasks = report.task_table;
    clear(body).append(
      el("section", { class: "summary", "aria-labelledby": "report-title" },
        el("h2", { id: "report-title" }, `Run ${report.run}`),
        el("p", { class: "big" }, el("strong", { class: "pass-rate" }, percent(report.pass_rate)),
          ` passed (${report.passed} of ${report.total}) · 95% interval ${percent(report.interval.low)}–${percent(report.interval.high)}`),
        rateChart(report),
        el("p", { class: "muted small" },
          `${report.epochs} epoch${report.epochs === 1 ? "" : "s"} · pass@${report.epochs} ${percent(report.pass_at_k)} · pass^${report.epochs} ${percent(report.pass_hat_k)} · `,
          `${report.steps} steps · ${cost(report.cost_usd === null ? null : Number(report.cost_usd), report.unpriced_sessions, report.total)}`)),
      el("h2", {}, "Tasks"),
      el("div", { class: "table-wrap" }, el("table", { class: "sessions tasks" },
        el("thead", {}, el("tr", {}, ["Task", "Passed", "Steps", "Cost", "Sessions"].map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, tasks.map((t) => el("tr", {},
          el("td", { "data-label": "Task" }, t.id),
          el("td", { "data-label": "Passed", class: "num" }, `${t.passed} / ${t.epochs}`),
          el("td", { "data-label": "Steps", class: "num" }, String(t.steps)),
          el("td", { "data-label": "Cost", class: "num" }, t.cost_usd === null ? UNKNOWN_COST : `$${Number(t.cost_usd).toFixed(4)}`),
          el("td", { "data-label": "Sessions" }, t.session_ids.map((id, i) =>
            el("a", { href: `#/sessions/${id}`, class: "session-link", "aria-label": `session ${i + 1} of task ${t.id}` }, `#${i + 1}`)))))))),
      el("div", { class: "charts" },
        barChart("Steps per task", tasks, (t) => t.steps, (t) => String(t.steps)),
        barChart("Cost per task (USD)", tasks, (t) => Number(t.cost_usd || 0), (t) => t.cost_usd === null ? UNKNOWN_COST : `$${Number(t.cost_usd).toFixed(4)}`)));
  }).catch((error) => {
    if (closed) return;
    clear(body);
    showError(error);
  });
  return () => { closed = true; };
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
        el("td", { "data-label": "Task" }, task),
        outcomeCell(left === "passed or failed" ? (inA.get(task) && 2 * inA.get(task).passed > inA.get(task).epochs ? "passed" : "failed") : left, inA.get(task), "A"),
        outcomeCell(right === "passed or failed" ? (inB.get(task) && 2 * inB.get(task).passed > inB.get(task).epochs ? "passed" : "failed") : right, inB.get(task), "B"),
        el("td", { "data-label": "Change" }, el("span", { class: `flip-tag ${key}` }, change)))));
    const count = (key) => (c[key] || []).length;
    const money = (v) => v === null || v === undefined ? "–" : `${Number(v) >= 0 ? "+" : "−"}$${Math.abs(Number(v)).toFixed(4)}`;
    clear(body).append(
      el("section", { class: "summary", "aria-labelledby": "compare-rates" },
        el("h2", { id: "compare-rates" }, "Pass rates"),
        el("p", {}, el("strong", {}, "A "), `${c.run_a}: `, el("strong", { class: "rate-a" }, percent(c.pass_rate_a)), ` (95% interval ${interval(c.interval_a)}) `, intervalChart(c.pass_rate_a, c.interval_a)),
        el("p", {}, el("strong", {}, "B "), `${c.run_b}: `, el("strong", { class: "rate-b" }, percent(c.pass_rate_b)), ` (95% interval ${interval(c.interval_b)}) `, intervalChart(c.pass_rate_b, c.interval_b)),
        el("p", { class: "big" }, "B − A: ", el("strong", { class: "difference" }, signedPercent(c.difference)),
          ` (95% interval ${signedPercent(c.difference_interval.low)} to ${signedPercent(c.difference_interval.high)})`),
        el("p", { class: "muted small" }, `cost ${money(c.cost_delta_usd)} · steps ${c.steps_delta >= 0 ? "+" : ""}${c.steps_delta}`,
          c.replays ? ` · ${c.diverged.length} of ${c.replays} replays diverged` : "")),
      el("h2", {}, "Flip table"),
      el("p", { class: "muted small flip-counts" }, `${count("regressed")} regressed · ${count("newly_passing")} newly passing · ${count("both")} passed in both · ${count("neither")} failed in both`,
        count("only_a") || count("only_b") ? ` · ${count("only_a")} only in A · ${count("only_b")} only in B` : ""),
      el("div", { class: "table-wrap" }, el("table", { class: "sessions flips" },
        el("caption", { class: "visually-hidden" }, "Each task's outcome in run A and run B"),
        el("thead", {}, el("tr", {}, ["Task", `A ${c.run_a}`, `B ${c.run_b}`, "Change"].map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 4 }, "The runs have no task in common."))))));
  }).catch((error) => {
    if (closed) return;
    clear(body);
    showError(error);
  });
  return () => { closed = true; };
}
