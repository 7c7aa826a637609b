"""A member's control characters never reach an admin's terminal raw: a session created through
the API with escape sequences in its task (the title) and its messages, listed and shown by
the admin's `chronicle`, prints them escaped; ``--json`` stays exact JSON.

Before, ``chronicle sessions`` and ``chronicle events`` printed the title as it was: ESC ] 0
retitled the admin's terminal window, BEL rang, ESC [ 2 J cleared the screen.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx

from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle

HOSTILE = "\x1b]0;pwned\x07\x1b[2J"
#: Characters a terminal acts on (C0 but newline and tab, DEL, C1, bidirectional overrides).
CONTROLS = {chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]} | {
    "\u202e"
}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def raw_controls(text: str) -> set[str]:
    return {c for c in text if c in CONTROLS}


def test_a_members_escape_sequences_are_shown_escaped_to_an_admin(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve()
    member = bearer(server.token("mallory"))
    created = httpx.post(f"{server.url}/api/sessions", headers=member, json={"task": HOSTILE})
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    said = httpx.post(
        f"{server.url}/api/sessions/{session}/messages",
        headers=member,
        json={"content": "look\x1b[1A\x1b[2K\rall tests passed\u202e\x9b31m"},
    )
    assert said.status_code == 202, said.text

    deadline = time.monotonic() + 30
    while True:  # the session list is a projection: wait until it has the session
        listed = chronicle("sessions", env=server.env)
        assert listed.returncode == 0, listed.stderr
        if session in listed.stdout:
            break
        assert time.monotonic() < deadline, listed.stdout
        time.sleep(0.5)
    assert raw_controls(listed.stdout) == set(), repr(listed.stdout)
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in listed.stdout

    shown = chronicle("events", session, env=server.env)
    assert shown.returncode == 0, shown.stderr
    assert raw_controls(shown.stdout + shown.stderr) == set(), repr(shown.stdout)
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in shown.stdout
    # (one line per event: the renderer shows the carriage return as a line break, ⏎)
    assert "look\\x1b[1A\\x1b[2K ⏎ all tests passed\\u202e\\u009b31m" in shown.stdout
    assert "\n" in shown.stdout  # one line per event, as ever

    # --json is exact JSON: the same strings come back when it is parsed
    as_json = chronicle("events", session, "--json", env=server.env)
    assert as_json.returncode == 0, as_json.stderr
    assert raw_controls(as_json.stdout) == set(), repr(as_json.stdout)
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert events[0]["payload"]["title"] == HOSTILE
    messages = [e["payload"]["content"] for e in events if e["kind"] == "message"]
    assert "look\x1b[1A\x1b[2K\rall tests passed\u202e\x9b31m" in messages
    listed_json = chronicle("sessions", "--json", env=server.env)
    titles = [json.loads(line)["title"] for line in listed_json.stdout.splitlines()]
    assert HOSTILE in titles
