// An evaluation run's report (admins: evaluation sessions have no owner): pass rate with its
// 95% interval, pass@k, the per-task table linking each session, steps and cost per task
// drawn as SVG bars.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { cost } from "./format.js";

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes = {}, ...children) {
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
function barChart(label, rows, value, text) {
  const max = Math.max(1e-9, ...rows.map(value));
  const height = 22 * rows.length + 6;
  return el("figure", { class: "chart-figure" }, el("figcaption", {}, label),
    svg("svg", { viewBox: `0 0 400 ${height}`, class: "chart bars", role: "img", "aria-label": label },
      rows.map((row, i) => svg("g", { transform: `translate(0 ${i * 22 + 3})` },
        svg("text", { x: 0, y: 14, class: "axis" }, row.id.length > 18 ? row.id.slice(0, 17) + "…" : row.id),
        svg("rect", { x: 130, y: 3, height: 14, width: Math.max(1, (value(row) / max) * 200), class: "bar" }),
        svg("text", { x: 336, y: 14, class: "axis" }, text(row))))));
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
    el("p", { class: "muted" }, "Runs are started with ", el("code", {}, "chronicle eval run"), "; their sessions belong to no user, so an admin reads their reports."),
    form, body);
  if (!run) {
    name.focus();
    return () => {};
  }
  let closed = false;
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
          el("td", { "data-label": "Cost", class: "num" }, t.cost_usd === null ? "–" : `$${Number(t.cost_usd).toFixed(4)}`),
          el("td", { "data-label": "Sessions" }, t.session_ids.map((id, i) =>
            el("a", { href: `#/sessions/${id}`, class: "session-link", "aria-label": `session ${i + 1} of task ${t.id}` }, `#${i + 1}`)))))))),
      el("div", { class: "charts" },
        barChart("Steps per task", tasks, (t) => t.steps, (t) => String(t.steps)),
        barChart("Cost per task (USD)", tasks, (t) => Number(t.cost_usd || 0), (t) => t.cost_usd === null ? "–" : `$${Number(t.cost_usd).toFixed(4)}`)));
  }).catch((error) => {
    if (closed) return;
    clear(body);
    showError(error);
  });
  return () => { closed = true; };
}
