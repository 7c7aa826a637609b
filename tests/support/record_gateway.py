"""A real ``chronicle serve`` whose gateway calls the fake model, with a user who records, for
tests of ``chronicle record`` and its replay; and reading back what a run recorded."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.support.chronicle_server import ServerProcess, database_environment, start_server
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer
from tests.support.postgres import PgServer, database_from_template

#: The user whose sessions and tokens the runs are.
USER = "rec"
#: The deployment's key for the model (``database_environment``'s): the only key the fake
#: model takes, so every recorded call proves the agent's token never reached it.
SERVER_KEY = "sk-not-used"
#: How ``chronicle record`` names the session it records, as it starts.
STARTED = re.compile(r"recording session ([0-9a-f-]{36})")


def fake_model() -> FakeLlmServer:
    server = FakeLlmServer().start()
    server.key = SERVER_KEY
    return server


def recording_server(
    pg_server: PgServer,
    pg_template: str,
    root: Path,
    upstream: FakeLlmServer,
    users: Sequence[tuple[str, bool]] = ((USER, False),),
) -> Iterator[ServerProcess]:
    """A server on a fresh database, its model the fake one, and ``users`` added (name,
    admin or not)."""
    name = f"rec_{uuid.uuid4().hex[:16]}"
    for admin_url in database_from_template(pg_server.admin, pg_template, name):
        env = database_environment(pg_server, admin_url, root, llm_base_url=upstream.base_url)
        server = start_server(env)
        try:
            for user, admin in users:
                added = chronicle("users", "add", user, *(["--admin"] if admin else []), env=env)
                assert added.returncode == 0, added.stderr
            yield server
        finally:
            server.stop()


def events(server: ServerProcess, session: str) -> list[dict[str, Any]]:
    listed = chronicle("events", session, "--json", env=server.env)
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def session_of(result: subprocess.CompletedProcess[str]) -> str:
    found = STARTED.search(result.stderr)
    assert found, result.stderr
    return found.group(1)
