"""`POST /api/sessions/{id}/redactions`: an admin removes a part of an event over the API; the
record names them, the session reads `[redacted]` there and still verifies; a member may not
redact (403, their own session too), and a path or event that is not there is a 422; an export
on the server's disk takes the marker too."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle


def _client(server: ServerProcess, name: str, *, admin: bool = False) -> httpx.Client:
    token = server.token(name, admin=admin)
    return httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


def _session_with_events(alice: httpx.Client) -> tuple[str, list[dict[str, Any]]]:
    created = alice.post("/api/sessions", json={"task": "remember sk-test-SECRET-42"})
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    deadline = time.monotonic() + 30
    while True:  # its agent ends in error (no model is reachable): the events are there
        events = alice.get(f"/api/sessions/{session}/events").json()["events"]
        if any(e["kind"] == "message" for e in events) or time.monotonic() > deadline:
            return session, events
        time.sleep(0.1)


def _line_of(export: Path, seq: int) -> str:
    """The export file's line of the event ``seq``."""
    for line in export.read_text().splitlines():
        parsed = json.loads(line)
        if parsed.get("type") == "event" and parsed.get("seq") == seq:
            return line
    raise AssertionError(f"no line of seq {seq}")


def test_an_admin_redacts_a_message_and_a_member_cannot(
    shared_server: ServerProcess, tmp_path: Path
) -> None:
    alice = _client(shared_server, "alice")
    root = _client(shared_server, "root", admin=True)
    session, events = _session_with_events(alice)
    message = next(e for e in events if e["kind"] == "message")
    body = {"seq": message["seq"], "path": "/content", "reason": "a pasted key"}
    export = tmp_path / "export.jsonl"  # a copy on the server's disk, in its ledger
    written = chronicle("export", session, "-o", str(export), env=shared_server.env)
    assert written.returncode == 0 and b"SECRET-42" in export.read_bytes(), written.stderr

    refused = alice.post(f"/api/sessions/{session}/redactions", json=body)
    assert refused.status_code == 403, refused.text
    made = root.post(f"/api/sessions/{session}/redactions", json=body)
    assert made.status_code == 201, made.text
    [record] = made.json()["redactions"]
    assert (record["target_seq"], record["path"], record["user"]) == (
        message["seq"],
        "/content",
        "root",
    )
    after = alice.get(f"/api/sessions/{session}/events").json()["events"]
    redacted = next(e for e in after if e["seq"] == message["seq"])
    assert redacted["payload"]["content"] == "[redacted]" and "SECRET-42" not in str(redacted)
    deadline = time.monotonic() + 30  # the copy takes the marker after the response
    while "SECRET-42" in _line_of(export, message["seq"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "SECRET-42" not in _line_of(export, message["seq"])
    assert '"$redacted"' in _line_of(export, message["seq"])
    checked = chronicle("verify", "--file", str(export), env=shared_server.env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    recorded = next(e for e in after if e["kind"] == "redaction")
    assert recorded["payload"]["user"] == "root" and recorded["payload"]["reason"] == (
        "a pasted key"
    )

    for wrong, says in (
        ({"seq": message["seq"], "path": "/content", "reason": "again"}, "already redacted"),
        ({"seq": message["seq"], "path": "/nope", "reason": "x"}, "nothing at /nope"),
        ({"seq": 100000, "reason": "x"}, "has no event 100000"),
        ({"seq": 1, "reason": "   "}, "reason"),
    ):
        answer = root.post(f"/api/sessions/{session}/redactions", json=wrong)
        assert answer.status_code == 422 and says in answer.text, answer.text
