// The platform's audit log, for admins (#/audit): who was given or lost a token, who signed in
// and out from where, which users changed, which admin read or forked someone else's session,
// oldest first a page at a time, with the log's hash chain checked. A member is told it is
// not theirs to read (the API answers them 403).

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { localTime } from "./format.js";

const PAGE = 200;

function what(record) {
  const p = record.payload;
  switch (record.kind) {
    case "audit.token_created":
      return `token ${p.token_id} made for ${p.owner}${p.label ? ` (${p.label})` : ""}, expires ${p.expires_at ? localTime(p.expires_at) : "never"}`;
    case "audit.token_revoked":
      return `token ${p.token_id} of ${p.owner || "?"} revoked`;
    case "audit.login":
      return `signed in${p.token_id ? ` with token ${p.token_id}` : " with a sign-in link"} (login ${p.login_id})`;
    case "audit.logout":
      return `signed out (login ${p.login_id})`;
    case "audit.user_changed":
      return `user ${p.name} ${p.change.replaceAll("_", " ")}${p.is_admin === true ? " (admin)" : ""}`;
    case "audit.session_read":
      return `read session ${p.session_id} of ${p.owner}`;
    case "audit.fork_started":
    case "audit.replay_started":
      return `started ${record.kind === "audit.fork_started" ? "fork" : "replay"} ${p.session_id} of ${p.owner}'s session ${p.source_session}`;
    case "audit.sessions_archived":
      return `archived ${p.sessions} sessions (${p.events} events) that ended before ${localTime(p.before)} to ${p.archived_to}`;
    case "audit.partition_detached":
      return `detached ${p.partition} (${localTime(p.start)} to ${localTime(p.end)}): its sessions are archived in ${p.archived_to}`;
    default:
      return JSON.stringify(p);
  }
}

function row(record) {
  const p = record.payload;
  return el("tr", {},
    el("td", { class: "num" }, String(record.seq)),
    el("td", {}, localTime(record.created_at)),
    el("td", {}, p.actor || ""),
    el("td", {}, p.via === "cli" ? "host" : p.address || "api"),
    el("td", {}, what(record)));
}

export function auditView({ main, me, showError }) {
  clear(main).append(el("h1", {}, "Audit log"));
  if (!me.is_admin) {
    main.append(el("p", { class: "muted" }, "The platform's audit log is for admins only."));
    return () => {};
  }
  let closed = false;
  const status = el("p", { class: "muted", role: "status" }, "Checking the log's hash chain…");
  const rows = el("tbody", {});
  const table = el("div", { class: "table-wrap" },
    el("table", { class: "sessions audit" },
      el("thead", {}, el("tr", {},
        el("th", { scope: "col" }, "#"), el("th", { scope: "col" }, "When"), el("th", { scope: "col" }, "Who"),
        el("th", { scope: "col" }, "From"), el("th", { scope: "col" }, "What"))),
      rows));
  const more = el("button", { type: "button", hidden: true }, "Older records are shown; load more");
  main.append(
    el("p", { class: "muted" }, "Tokens made and revoked, sign-ins and sign-outs, user changes, and admins' reads, forks and replays of other users' sessions. Also ",
      el("code", {}, "chronicle audit log"), " and the ", el("code", {}, "platform_audit"), " view."),
    status, table, more);

  let after = 0;
  async function page() {
    more.disabled = true;
    try {
      const found = await api(`/api/audit?after_seq=${after}&limit=${PAGE}`);
      if (closed) return;
      rows.append(...found.records.map(row));
      if (!rows.children.length) rows.append(el("tr", {}, el("td", { colspan: 5, class: "muted" }, "Nothing recorded yet.")));
      after = found.next_after_seq ?? after;
      more.textContent = "Load more";
      more.hidden = found.next_after_seq === null;
    } catch (error) {
      if (!closed) showError(error);
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener("click", page);
  page();
  api("/api/audit/verify").then((report) => {
    if (closed) return;
    status.textContent = report.ok
      ? `Hash chain intact: ${report.checked} events checked.`
      : `The log does not verify${report.first_bad_seq ? ` at seq ${report.first_bad_seq}` : ""}: ${report.reason}`;
    status.className = report.ok ? "muted" : "error";
  }).catch((error) => { if (!closed) showError(error); });
  return () => { closed = true; };
}
