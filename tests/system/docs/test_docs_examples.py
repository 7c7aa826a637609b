"""The shell examples of README.md and docs/ run as written, one page at a time, against a
fresh database, a real ``chronicle serve`` and a model server that answers every session the
same way (write hello.py, then finish).

Each command runs in bash with the environment the page's earlier commands exported; its exit
status must be the one the example shows (``[exit N]``, else 0) and every output line a
``console`` block shows must be in what it printed, in order (``…`` for anything). A read
(``curl`` without ``-d`` or ``-X``) whose shown output is a later state (a run or replay that
has not ended yet) is asked again until it shows it. How examples are found, marked and their
placeholders filled in: tests/support/doc_examples.py and docs/contributing.md."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.analyst_login import analyst_login
from tests.support.chronicle_server import (
    ServerProcess,
    database_environment,
    start_server,
    wait_until_run_ended,
)
from tests.support.cli import chronicle
from tests.support.doc_examples import (
    Block,
    Placeholders,
    blocks,
    documented_pages,
    match_output,
)
from tests.support.doc_model import HelloModel
from tests.support.postgres import PgServer, ServerAddress
from tests.support.repository import ROOT

#: The system prompt's line replay.md's example edits, and what it becomes.
PROMPT_EDIT = (
    "Work in small steps: look before you change, run what you wrote, read errors and fix them.",
    "Work in small steps and run the tests after every change.",
)
RETRY_SECONDS = 60


def runnable_pages() -> list[str]:
    pages = []
    for path in documented_pages():
        if any(block.runs_here for block in blocks(path)):
            pages.append(path.relative_to(ROOT).as_posix())
    return pages


@pytest.fixture
def model() -> Iterator[HelloModel]:
    server = HelloModel()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def server(
    pg_server: PgServer,
    pg_address: ServerAddress,
    database_url: str,
    model: HelloModel,
    tmp_path: Path,
) -> Iterator[ServerProcess]:
    """``chronicle serve`` on a fresh database, the model server as ``openai/gpt-4o-mini``
    (the model the examples name), an analyst's login for ``chronicle sql``."""
    with analyst_login(database_url, pg_address) as analyst_url:
        env = database_environment(
            pg_server, database_url, tmp_path,
            llm_model="openai/gpt-4o-mini", llm_base_url=model.base_url,
            llm_api_key="sk-fake", llm_native_tool_calling="true", llm_retries="2",
            analyst_database_url=analyst_url, poll_interval="0.5",
        )  # fmt: skip
        started = start_server(env)
        try:
            yield started
        finally:
            started.stop()


def session_of(server: ServerProcess, token: str) -> str:
    """A session the server's worker ran to its end."""
    headers = {"Authorization": f"Bearer {token}"}
    made = httpx.post(f"{server.url}/api/sessions", headers=headers,
                      json={"task": "Write hello.py that prints hello chronicle."})  # fmt: skip
    assert made.status_code == 201, made.text
    session = made.json()["id"]
    wait_until_run_ended(server.url, headers, session)
    return session


def shell_environment(server: ServerProcess, fill: Placeholders, home: Path) -> dict[str, str]:
    """The server's environment, with the placeholders' values, a fresh home holding the
    directories the examples name, ``chronicle`` and ``python`` on the PATH, and an editor
    that makes replay.md's edit."""
    for project in ("project", "src/project"):
        (home / project).mkdir(parents=True, exist_ok=True)
    old, new = PROMPT_EDIT
    editor = home / "edit-prompt"
    editor.write_text(f'#!/bin/sh\nsed -i {shlex.quote(f"s/{old}/{new}/")} "$1"\n')
    editor.chmod(0o755)
    return (
        server.env
        | fill.environment()
        | {
            "HOME": str(home),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "EDITOR": str(editor),
            "CHRONICLE_URL": server.url,
        }
    )


def run_block(block: Block, fill: Placeholders, env: dict[str, str], work: Path) -> None:
    state = work / ".exported"
    state.touch()
    for command in block.commands():
        line = fill.fill(command.text)
        script = f"source {shlex.quote(str(state))}\n{line}\nstatus=$?\n" \
                 f"export -p > {shlex.quote(str(state))}\nexit $status\n"  # fmt: skip
        reads = line.startswith("curl ") and " -d " not in line and " -X " not in line
        deadline = time.monotonic() + RETRY_SECONDS
        while True:
            done = subprocess.run(["bash", "-c", script], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=300)  # fmt: skip
            missing, printed = match_output(command.shown, done.stdout)
            if missing is None or not reads or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        said = f"{block.where}: `{line}`\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        assert done.returncode == command.status, f"exit {done.returncode}; {said}"
        assert missing is None, f"did not print {missing!r}; {said}"
        fill.printed |= printed


@pytest.mark.parametrize("page", runnable_pages())
def test_the_examples_run_as_written(
    page: str, server: ServerProcess, model: HelloModel, tmp_path: Path
) -> None:
    token = server.token("admin", admin=True)
    added = chronicle("users", "add", "alice", env=server.env)
    assert added.returncode == 0, added.stderr
    fill = Placeholders(url=server.url, token=token, session=session_of(server, token))
    work = tmp_path / "work"
    work.mkdir()
    env = shell_environment(server, fill, tmp_path / "home")
    for block in blocks(ROOT / page):
        if block.runs_here:
            run_block(block, fill, env, work)
