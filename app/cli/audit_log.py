"""`chronicle audit log`: the platform's own audit trail (app/events/platform_audit.py).

Who was given or lost a token, who signed in and out from where, which users were added or
changed, which admin read, forked or replayed another user's session: one line each (or
JSON lines), oldest first; control characters are shown escaped, as by every command. It
reads the database directly, as every host command does; through the API the same records
are ``GET /api/audit`` (admins only). ``chronicle verify`` and ``chronicle anchor`` cover the
log like any session.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from app.cli.analytics import since_date
from app.cli.log import open_store
from app.config import Settings
from app.store import RecordedEvent

PAGE = 1000


def add_parsers(commands: argparse._SubParsersAction) -> None:
    audit = commands.add_parser("audit", help="the platform's own audit trail")
    sub = audit.add_subparsers(dest="audit_command", required=True, metavar="COMMAND")
    log = sub.add_parser(
        "log", help="tokens, logins, user changes and admins' reads of others' sessions"
    )
    log.add_argument(
        "--since",
        type=since_date,
        metavar="WHEN",
        help="from this UTC date or time on (2026-12-01, 2026-12-01T14:30)",
    )
    log.add_argument("--json", action="store_true", help="one JSON object a line")
    audit.set_defaults(handler=run)


def _what(kind: str, p: dict[str, Any]) -> str:
    match kind:
        case "audit.token_created":
            expires = p.get("expires_at") or "never"
            label = f" {p['label']!r}" if p.get("label") else ""
            return f"token {p['token_id']} for {p['owner']}{label}, expires {expires}"
        case "audit.token_revoked":
            return f"revoked token {p['token_id']} of {p.get('owner') or '?'}"
        case "audit.login":
            using = f" with token {p['token_id']}" if p.get("token_id") else ""
            return f"logged in{using}: login {p['login_id']}"
        case "audit.logout":
            return f"logged out: login {p['login_id']}"
        case "audit.user_changed":
            admin = p.get("is_admin")
            role = "" if admin is None else " (admin)" if admin else " (user)"
            return f"user {p['name']} {p['change']}{role}"
        case "audit.session_read":
            return f"read session {p['session_id']} of {p['owner']}"
        case "audit.fork_started" | "audit.replay_started":
            started = kind.removeprefix("audit.").removesuffix("_started")
            return (
                f"started {started} {p['session_id']} of session {p['source_session']} "
                f"of {p['owner']}"
            )
        case "audit.sessions_archived":
            return (
                f"archived {p['sessions']} sessions ({p['events']} events) that ended before "
                f"{p['before']} to {p['archived_to']} (manifest {p['manifest']})"
            )
        case "audit.partition_detached":
            return (
                f"detached {p['partition']} ({p['start']} to {p['end']}): its sessions are "
                f"archived in {p['archived_to']}"
            )
        case "audit.redaction":
            where = p["path"] or "the whole payload"
            return (
                f"redacted {where} of seq {p['target_seq']} of session {p['session_id']}: "
                f"{p['reason']} (recorded at seq {p['recorded_seq']})"
            )
        case "redaction":  # of a record of this log (a person's name: `users erase`)
            where = p.get("path") or "the whole record"
            return f"redacted {where} of record {p.get('target_seq')}: {p.get('reason')}"
        case "audit.session_erased":
            return (
                f"erased session {p['session_id']} ({p['events']} events) by policy "
                f"{p['policy']}; tombstone signed by key {p['key_id']}"
            )
        case "audit.user_erased":
            return (
                f"erased user {p['user_id']} (now {p['renamed_to']}): {p['sessions']} sessions "
                f"erased, {p['redacted']} mentions redacted"
            )
    return json.dumps(p, ensure_ascii=False, sort_keys=True)


def audit_line(event: RecordedEvent) -> str:
    p = event.payload
    when = event.created_at.strftime("%Y-%m-%d %H:%M:%SZ")
    where = p.get("via", "?") + (f" {p['address']}" if p.get("address") else "")
    who = p.get("actor") or p.get("user") or "?"
    return f"{event.seq:>6}  {when}  {who} ({where})  {_what(event.kind, p)}"


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.sessions.sql.platform_audit import read_audit

    async with await open_store(settings) as store:
        after, since, printed = 0, args.since, 0
        while True:
            page = await read_audit(store, since=since, after_seq=after, limit=PAGE)
            if not page:
                break
            for event in page:
                print(json.dumps(event.to_json_dict()) if args.json else audit_line(event))
            printed += len(page)
            after, since = page[-1].seq, None
    if not printed and not args.json:
        print("the audit log has no records" + (" since then" if args.since else ""))
    return 0
