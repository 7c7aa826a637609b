// Usage (#/usage?from=DAY&to=DAY&user=NAME): tokens, cost and model calls by day, model and
// user, with failed calls, tool failures and errors, over UTC days (the last 30 by default),
// as the analytics views count them (GET /api/usage). A member sees their own sessions'
// usage; an admin everyone's, or one user's. Charts are SVG drawn here; tables follow them.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { UNKNOWN_COST, cost } from "./format.js";
import { barChart, svg } from "./evaluation.js";

const DAY_MS = 86400000;

function count(n) {
  return Number(n || 0).toLocaleString("en-US");
}

function calls(n, one, many) {
  return `${count(n)} ${n === 1 ? one : many}`;
}

function groupCost(group) {
  return cost(group.cost_usd, group.unpriced_calls, group.llm_calls);
}

/** Every UTC day from first to last (YYYY-MM-DD), with its row or zeros. */
function everyDay(first, last, rows) {
  const found = new Map(rows.map((row) => [row.day, row]));
  const days = [];
  for (let t = Date.parse(`${first}T00:00:00Z`); t <= Date.parse(`${last}T00:00:00Z`); t += DAY_MS) {
    const day = new Date(t).toISOString().slice(0, 10);
    days.push(found.get(day) || { day, llm_calls: 0, failed_llm_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: null, unpriced_calls: 0 });
  }
  return days;
}

function emptyFigure(label, why) {
  return el("figure", { class: "chart-figure" }, el("figcaption", {}, label), el("p", { class: "muted no-data" }, why));
}

/** One column per day (``text`` says its value, ``axis`` writes the tallest's); ``part``
 * (optional) is drawn over the column's foot in its own colour (failed calls over calls,
 * output tokens over all tokens). */
function dayChart(label, days, value, text, { axis = count, part = null, partName = "", partClass = "part", empty = "No data in these days." } = {}) {
  if (!days.some((day) => value(day) > 0)) return emptyFigure(label, empty);
  const width = 360;
  const height = 150;
  const left = 60;
  const top = 8;
  const plot = height - top - 24;
  const max = Math.max(...days.map(value));
  const step = (width - left - 4) / days.length;
  const gap = step > 4 ? 1 : 0;
  const y = (v) => top + plot - (v / max) * plot;
  const columns = days.map((day, i) => {
    const v = value(day);
    if (!v) return null;
    const x = left + i * step;
    const title = svg("title", {}, `${day.day}: ${text(day)}${part && part(day) ? `, ${partName} ${count(part(day))}` : ""}`);
    return svg("g", { class: "day", "data-day": day.day },
      svg("rect", { x, y: y(v), width: Math.max(1, step - gap), height: top + plot - y(v), class: "bar" }, title),
      part && part(day) ? svg("rect", { x, y: y(part(day)), width: Math.max(1, step - gap), height: top + plot - y(part(day)), class: `bar ${partClass}` }) : null);
  });
  return el("figure", { class: "chart-figure" }, el("figcaption", {}, label),
    svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart days", role: "img", "aria-label": label },
      svg("line", { x1: left, x2: width - 4, y1: top + plot, y2: top + plot, class: "baseline" }),
      svg("text", { x: left - 6, y: top + 10, class: "axis end" }, axis(max)),
      svg("text", { x: left - 6, y: top + plot, class: "axis end" }, "0"),
      svg("text", { x: left, y: height - 6, class: "axis" }, days[0].day),
      svg("text", { x: width - 4, y: height - 6, class: "axis end" }, days[days.length - 1].day),
      columns),
    part ? el("p", { class: "muted small legend" }, el("span", { class: `swatch ${partClass}` }), ` ${partName}`) : null);
}

/** Horizontal bars of a group (by model, by user), or a note when it has none. */
function groupChart(label, rows, name, empty) {
  if (!rows.length) return emptyFigure(label, empty);
  const priced = rows.some((row) => row.cost_usd);
  const value = priced ? (row) => row.cost_usd || 0 : (row) => row.llm_calls;
  const text = priced ? groupCost : (row) => `${count(row.llm_calls)} calls`;
  return barChart(priced ? `${label}: cost (USD)` : `${label}: model calls`, rows.map((row) => ({ ...row, id: name(row) })), value, text);
}

function th(text, numeric = false) {
  return el("th", { scope: "col", class: numeric ? "num" : null }, text);
}

function td(label, value, numeric = true) {
  return el("td", { "data-label": label, class: numeric ? "num" : null }, value);
}

const CALL_COLUMNS = [
  ["Calls", (g) => count(g.llm_calls)],
  ["Failed", (g) => count(g.failed_llm_calls)],
  ["Input tokens", (g) => count(g.input_tokens)],
  ["Output tokens", (g) => count(g.output_tokens)],
  ["Cost", groupCost],
];

function table(caption, className, first, rows, columns) {
  return el("section", { class: "usage-table", "aria-label": caption },
    el("h2", {}, caption),
    el("div", { class: "table-wrap" }, el("table", { class: `sessions usage ${className}` },
      el("caption", { class: "visually-hidden" }, caption),
      el("thead", {}, el("tr", {}, th(first[0]), columns.map(([name]) => th(name, true)))),
      el("tbody", {}, rows.length
        ? rows.map((row) => el("tr", {}, td(first[0], first[1](row), false), columns.map(([name, value]) => td(name, value(row)))))
        : el("tr", {}, el("td", { colspan: columns.length + 1, class: "muted" }, "None in these days."))))));
}

function summary(u) {
  const t = u.total;
  const fact = (name, value, extra = null) => el("div", { class: "usage-fact" }, el("dt", {}, name), el("dd", {}, value, extra));
  return el("dl", { class: "usage-facts" },
    fact("Cost", groupCost(t), t.unpriced_calls ? el("span", { class: "muted small" }, ` (${count(t.unpriced_calls)} unpriced)`) : null),
    fact("Model calls", count(t.llm_calls), t.failed_llm_calls ? el("span", { class: "muted small" }, ` (${count(t.failed_llm_calls)} failed)`) : null),
    fact("Tokens in / out", `${count(t.input_tokens)} / ${count(t.output_tokens)}`),
    fact("Sessions", count(t.sessions)),
    fact("Tool failures", `${count(u.failed_tool_calls)} of ${count(u.tool_calls)}`),
    fact("Errors", count(u.errors)));
}

function report(u) {
  const days = everyDay(u.first_day, u.last_day, u.days);
  const costly = (day) => day.cost_usd || 0;
  const tokens = (day) => day.input_tokens + day.output_tokens;
  return [
    summary(u),
    u.total.unpriced_calls || u.total.unknown_usage_calls
      ? el("p", { class: "muted small" },
        u.total.unpriced_calls ? `${calls(u.total.unpriced_calls, "answered call has", "answered calls have")} no price: a cost with none priced is ${UNKNOWN_COST}, and one marked ≥ is a lower bound. ` : "",
        u.total.unknown_usage_calls ? `${calls(u.total.unknown_usage_calls, "call", "calls")} sent token counts that could not be read: token sums are lower bounds.` : "")
      : null,
    el("div", { class: "charts usage-days" },
      dayChart("Cost per day (USD)", days, costly, groupCost,
        { axis: (max) => `$${max.toFixed(max < 1 ? 4 : 2)}`, empty: "No priced model call in these days." }),
      dayChart("Model calls per day", days, (day) => day.llm_calls, (day) => `${count(day.llm_calls)} calls`,
        { part: (day) => day.failed_llm_calls, partName: "failed", partClass: "failed", empty: "No model call in these days." }),
      dayChart("Tokens per day", days, tokens, (day) => `${count(tokens(day))} tokens`,
        { part: (day) => day.output_tokens, partName: "output", partClass: "output", empty: "No tokens in these days." })),
    el("div", { class: "charts usage-groups" },
      groupChart("By model", u.models, (row) => row.model || "(no model)", "No model call in these days."),
      groupChart("By user", u.users, (row) => row.user || "(no owner)", "No model call in these days.")),
    table("By day", "by-day", ["Day", (d) => d.day], u.days, [...CALL_COLUMNS,
      ["Tool calls", (d) => count(d.tool_calls)], ["Tool failures", (d) => count(d.failed_tool_calls)], ["Errors", (d) => count(d.errors)]]),
    table("By model", "by-model", ["Model", (m) => m.model || "(no model)"], u.models, [["Sessions", (m) => count(m.sessions)], ...CALL_COLUMNS]),
    table("By user", "by-user", ["User", (r) => r.user || "(no owner: recorded on the host)"], u.users, [["Sessions", (r) => count(r.sessions)], ...CALL_COLUMNS]),
    table("Tool calls", "by-tool", ["Tool", (t) => t.tool], u.tools, [["Calls", (t) => count(t.calls)], ["Failed", (t) => count(t.failed)],
      ["Failure rate", (t) => t.calls ? `${((100 * t.failed) / t.calls).toFixed(1)}%` : "–"]]),
    table("Errors", "by-kind", ["Kind", (e) => e.kind], u.error_kinds, [["Errors", (e) => count(e.errors)]]),
  ];
}

/** The usage view; ``query`` holds from, to and user as the address has them. */
export function usageView({ main, me, showError, clearError, go }, query) {
  const from = el("input", { id: "u-from", name: "from", type: "date", value: query.get("from") || "" });
  const to = el("input", { id: "u-to", name: "to", type: "date", value: query.get("to") || "" });
  const user = me.is_admin ? el("select", { id: "u-user", name: "user" }, el("option", { value: "" }, "Everyone")) : null;
  const form = el("form", { class: "filters usage-filters", role: "search", "aria-label": "Usage filters" },
    el("div", {}, el("label", { for: "u-from" }, "From (UTC day)"), from),
    el("div", {}, el("label", { for: "u-to" }, "To (UTC day)"), to),
    user ? el("div", {}, el("label", { for: "u-user" }, "User"), user) : null,
    el("div", { class: "align-end" }, el("button", { type: "submit" }, "Show")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (from.value) next.set("from", from.value);
    if (to.value) next.set("to", to.value);
    if (user && user.value) next.set("user", user.value);
    go(`/usage${next.toString() ? `?${next}` : ""}`);
  });
  const body = el("div", { class: "report usage-report" }, el("p", { class: "muted", role: "status" }, "Loading the usage…"));
  clear(main).append(el("h1", {}, "Usage"),
    el("p", { class: "muted" }, me.is_admin
      ? "Every user's sessions (pick one user to see theirs). The numbers are those of the SQL views llm_calls, tool_calls and errors (chronicle sql); a replay's served calls are not spend."
      : "Your sessions' model calls, tokens and cost, tool failures and errors. The numbers are those of the SQL views llm_calls, tool_calls and errors; a replay's served calls are not spend."),
    form, body);
  const asked = new URLSearchParams();
  for (const name of ["from", "to", "user"]) if (query.get(name)) asked.set(name, query.get(name));
  let closed = false;
  api(`/api/usage${asked.toString() ? `?${asked}` : ""}`).then((u) => {
    if (closed) return;
    clearError();
    from.value = u.first_day;
    to.value = u.last_day;
    if (user) {
      for (const name of u.users_to_pick) user.append(el("option", { value: name }, name));
      user.value = u.user || "";
    }
    clear(body).append(
      el("p", { class: "muted small", role: "status" }, `${u.first_day} to ${u.last_day} (UTC)${u.user ? ` · ${u.user}` : me.is_admin ? " · everyone" : ""}`),
      ...report(u).filter(Boolean));
  }).catch((error) => {
    if (closed) return;
    clear(body);
    showError(error);
  });
  return () => { closed = true; };
}
