"""The platform's own audit trail, through a real `chronicle serve` and the real CLI: tokens
made and revoked on the host, a browser login and logout, user changes, an admin reading and
forking another user's session each leave a record of who, when and from where; members
cannot read it, no route treats it as a session, it verifies and is anchored, and no token
is anywhere in it."""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from app.events.platform_audit import PLATFORM_LOG_ID
from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def audit(server: ServerProcess, admin: str, **params: Any) -> list[dict[str, Any]]:
    """Every record of the audit log, read page by page as an admin."""
    records: list[dict[str, Any]] = []
    after = 0
    while True:
        page = httpx.get(
            f"{server.url}/api/audit",
            headers=bearer(admin),
            params={"after_seq": after, "limit": 50, **params},
        )
        assert page.status_code == 200, page.text
        records += page.json()["records"]
        after = page.json()["next_after_seq"]
        if after is None:
            return records


def of_kind(records: list[dict[str, Any]], kind: str, **fields: Any) -> list[dict[str, Any]]:
    return [
        r
        for r in records
        if r["kind"] == kind and all(r["payload"].get(k) == v for k, v in fields.items())
    ]


def token_id(server: ServerProcess, user: str) -> str:
    listed = chronicle("tokens", "list", env=server.env).stdout
    return next(line.split()[0] for line in listed.splitlines() if f" {user} " in line)


@pytest.fixture(scope="module")
def admin(shared_server: ServerProcess) -> str:
    return shared_server.token("audit_root", admin=True)


def test_tokens_made_and_revoked_on_the_host_are_recorded_never_the_token(
    shared_server: ServerProcess, admin: str
) -> None:
    token = shared_server.token("audit_ann")
    made_id = token_id(shared_server, "audit_ann")
    assert chronicle("tokens", "revoke", made_id, env=shared_server.env).returncode == 0

    records = audit(shared_server, admin)
    host = f"cli:{getpass.getuser()}"
    [added] = of_kind(records, "audit.user_changed", name="audit_ann", change="added")
    [made] = of_kind(records, "audit.token_created", token_id=made_id)
    [revoked] = of_kind(records, "audit.token_revoked", token_id=made_id)
    for record in (added, made, revoked):
        assert (record["payload"]["actor"], record["payload"]["via"]) == (host, "cli")
        assert record["created_at"]
    assert made["payload"]["owner"] == revoked["payload"]["owner"] == "audit_ann"

    # Nothing of either token is anywhere in the log (the table, not just the audit stream).
    with psycopg.connect(shared_server.env["CHRONICLE_DATABASE_URL"]) as connection:
        for secret in (token, admin):
            found = connection.execute(
                "SELECT count(*) FROM events WHERE strpos(payload::text, %s) > 0",
                (secret.removeprefix("chr_"),),
            ).fetchone()
            assert found == (0,)


def test_a_browser_login_and_logout_are_recorded_with_the_address(
    shared_server: ServerProcess, admin: str
) -> None:
    token = shared_server.token("audit_bea")
    with httpx.Client(base_url=shared_server.url) as browser:
        login = browser.post("/api/login", json={"token": token})
        assert login.status_code == 200, login.text
        csrf = login.json()["csrf_token"]
        cookie = browser.cookies["chronicle_session"]
        out = browser.post("/api/logout", headers={"X-CSRF-Token": csrf})
        assert out.status_code == 200, out.text

    records = audit(shared_server, admin)
    [signed_in] = of_kind(records, "audit.login", actor="audit_bea")
    [signed_out] = of_kind(records, "audit.logout", actor="audit_bea")
    assert signed_in["payload"]["address"] == signed_out["payload"]["address"] == "127.0.0.1"
    assert signed_in["payload"]["via"] == "api"
    assert signed_in["payload"]["token_id"] == token_id(shared_server, "audit_bea")
    assert signed_in["payload"]["login_id"] == signed_out["payload"]["login_id"]
    assert signed_in["seq"] < signed_out["seq"]
    with psycopg.connect(shared_server.env["CHRONICLE_DATABASE_URL"]) as connection:
        for secret in (token.removeprefix("chr_"), cookie, csrf):
            found = connection.execute(
                "SELECT count(*) FROM events WHERE strpos(payload::text, %s) > 0", (secret,)
            ).fetchone()
            assert found == (0,)


def test_an_admin_reading_and_forking_another_users_session_is_recorded(
    shared_server: ServerProcess, admin: str
) -> None:
    owner = shared_server.token("audit_cat")
    created = httpx.post(
        f"{shared_server.url}/api/sessions",
        headers=bearer(owner),
        json={"task": "the quarterly figures"},
    )
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    own = httpx.post(f"{shared_server.url}/api/sessions", headers=bearer(admin), json={"task": "x"})
    assert own.status_code == 201, own.text

    for path in ("", "/events", "/events?after_seq=1", "/verify"):
        for visited in (session, own.json()["id"]):
            seen = httpx.get(
                f"{shared_server.url}/api/sessions/{visited}{path}", headers=bearer(admin)
            )
            assert seen.status_code == 200, seen.text
    httpx.get(f"{shared_server.url}/api/sessions/{session}", headers=bearer(owner))

    records = audit(shared_server, admin)
    reads = of_kind(records, "audit.session_read", session_id=session)
    assert len(reads) == 1  # one visit of many requests: once an hour per login
    [read] = reads
    assert (read["payload"]["actor"], read["payload"]["owner"]) == ("audit_root", "audit_cat")
    assert read["payload"]["address"] == "127.0.0.1"
    assert not of_kind(records, "audit.session_read", session_id=own.json()["id"])

    fork = httpx.post(
        f"{shared_server.url}/api/sessions/{session}/forks",
        headers=bearer(admin),
        json={"at_seq": 2},
    )
    assert fork.status_code == 202, fork.text
    [forked] = of_kind(audit(shared_server, admin), "audit.fork_started", source_session=session)
    assert forked["payload"]["session_id"] == fork.json()["id"]
    assert (forked["payload"]["actor"], forked["payload"]["owner"]) == ("audit_root", "audit_cat")


def test_members_cannot_read_it_and_no_route_treats_it_as_a_session(
    shared_server: ServerProcess, admin: str
) -> None:
    member = shared_server.token("audit_dan")
    for path in ("/api/audit", "/api/audit/verify"):
        refused = httpx.get(f"{shared_server.url}{path}", headers=bearer(member))
        assert refused.status_code == 403, refused.text
    log = f"{shared_server.url}/api/sessions/{PLATFORM_LOG_ID}"
    for token in (member, admin):
        for method, path, body in (
            ("GET", "", None),
            ("GET", "/events", None),
            ("GET", "/export", None),
            ("POST", "/messages", {"content": "forged"}),
            ("POST", "/forks", {"at_seq": 2}),
            ("POST", "/replays", {}),
        ):
            answer = httpx.request(method, log + path, headers=bearer(token), json=body)
            assert answer.status_code == 404, (method, path, answer.text)
    listed = httpx.get(f"{shared_server.url}/api/sessions?limit=200", headers=bearer(admin))
    assert str(PLATFORM_LOG_ID) not in {s["id"] for s in listed.json()["sessions"]}


def test_user_changes_on_the_host_and_by_an_admin_are_recorded(
    shared_server: ServerProcess, admin: str
) -> None:
    token = shared_server.token("audit_fay")
    with httpx.Client(base_url=shared_server.url) as browser:
        assert browser.post("/api/login", json={"token": token}).status_code == 200
    ended = httpx.post(f"{shared_server.url}/api/users/audit_fay/logout", headers=bearer(admin))
    assert ended.status_code == 200 and ended.json()["ended"] == 1, ended.text
    for change in ("promote", "demote", "disable"):
        done = chronicle("users", change, "audit_fay", env=shared_server.env)
        assert done.returncode == 0, done.stderr
    again = chronicle("users", "disable", "audit_fay", env=shared_server.env)
    assert again.returncode == 0  # disabled already: nothing changed, nothing recorded

    records = of_kind(audit(shared_server, admin), "audit.user_changed", name="audit_fay")
    changes = [(r["payload"]["change"], r["payload"]["actor"]) for r in records]
    host = f"cli:{getpass.getuser()}"
    assert changes == [
        ("added", host),
        ("logins_ended", "audit_root"),
        ("promoted", host),
        ("demoted", host),
        ("disabled", host),
    ]
    assert [r["payload"]["is_admin"] for r in records[2:4]] == [True, False]


def test_it_verifies_is_anchored_and_the_cli_prints_it(
    shared_server: ServerProcess, admin: str, tmp_path: Path
) -> None:
    shared_server.token("audit_eve")  # at least one record
    report = httpx.get(f"{shared_server.url}/api/audit/verify", headers=bearer(admin))
    assert report.status_code == 200 and report.json()["ok"], report.text

    verified = chronicle("verify", str(PLATFORM_LOG_ID), env=shared_server.env)
    assert verified.returncode == 0 and verified.stdout.startswith("ok"), verified.stdout
    every = chronicle("verify", "--all", env=shared_server.env)
    assert f"{PLATFORM_LOG_ID}  ok" in every.stdout, every.stdout
    anchors = tmp_path / "anchors.jsonl"
    anchored = chronicle("anchor", "--all", "-o", str(anchors), env=shared_server.env)
    assert anchored.returncode == 0, anchored.stderr
    signed = [json.loads(line)["session_id"] for line in anchors.read_text().splitlines()]
    assert str(PLATFORM_LOG_ID) in signed
    checked = chronicle(
        "verify", str(PLATFORM_LOG_ID), "--anchors", str(anchors), env=shared_server.env
    )
    assert checked.returncode == 0 and "1 anchors match" in checked.stdout, checked.stdout

    printed = chronicle("audit", "log", env=shared_server.env)
    assert printed.returncode == 0, printed.stderr
    assert any("user audit_eve added" in line for line in printed.stdout.splitlines())
    as_json = chronicle("audit", "log", "--json", "--since", "2000-01-01", env=shared_server.env)
    lines = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert lines and all(line["kind"].startswith("audit.") for line in lines)
    assert any(line["payload"].get("name") == "audit_eve" for line in lines)
    later = chronicle("audit", "log", "--since", "2999-01-01", env=shared_server.env)
    assert later.returncode == 0 and "no records since then" in later.stdout


def test_the_host_commands_refuse_to_run_it_as_a_session(
    shared_server: ServerProcess, admin: str, tmp_path: Path
) -> None:
    """Resuming or forking the log from the terminal would append an agent's events to it."""
    before = len(audit(shared_server, admin))
    log = str(PLATFORM_LOG_ID)
    resumed = chronicle("resume", log, "hello", "--workspace", str(tmp_path), env=shared_server.env)
    assert resumed.returncode != 0, resumed.stdout
    assert "the platform's audit log, not a session" in resumed.stderr, resumed.stderr
    # (a fork is refused before it reads the config: the log recorded no workspace)
    forked = chronicle(
        "fork", log, "--at", "2", "--workspace", str(tmp_path / "f"), env=shared_server.env
    )
    assert forked.returncode != 0, forked.stdout
    after = audit(shared_server, admin)
    assert len(after) == before
    assert all(record["kind"].startswith("audit.") for record in after)
