"""``chronicle record -- COMMAND``: a real ``chronicle serve`` whose gateway calls the fake
model, a real agent script on the official ``openai`` SDK run under the real command, and
what the session's log then holds (read back with ``chronicle events`` and ``verify``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply
from tests.support.forked import chronicle_popen
from tests.support.postgres import PgServer
from tests.support.record_gateway import SERVER_KEY, fake_model, recording_server
from tests.support.waiting import until

USER = "rec"
#: An admin's token is made only through the database owner's login (migration 0014).
ADMIN = "rec-admin"
STARTED = re.compile(r"recording session ([0-9a-f-]{36})")

AGENT = textwrap.dedent(
    """
    import sys
    from openai import OpenAI

    client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from chronicle record
    answers = []
    for question in ("first?", "second?"):
        reply = client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": question}]
        )
        answers.append(reply.choices[0].message.content)
    with open("answer.txt", "w") as out:
        out.write(" ".join(answers) + "\\n")
    print(" ".join(answers))
    sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    """
)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeLlmServer]:
    server = fake_model()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gateway(
    pg_server: PgServer,
    pg_template: str,
    tmp_path_factory: pytest.TempPathFactory,
    upstream: FakeLlmServer,
) -> Iterator[ServerProcess]:
    """One server for the module, its model the fake one, and the user who records."""
    root = tmp_path_factory.mktemp("record")
    yield from recording_server(
        pg_server, pg_template, root, upstream, users=((USER, False), (ADMIN, True))
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "agent.py").write_text(AGENT)
    (path / "README").write_text("a small project\n")
    return path


def record(
    gateway: ServerProcess,
    workspace: Path,
    *command: str,
    session: str | None = None,
    user: str = USER,
) -> subprocess.CompletedProcess[str]:
    options = ["--user", user, "--url", gateway.url, "--workspace", str(workspace)]
    if session is not None:
        options += ["--session", session]
    return chronicle("record", *options, "--", *command, env=gateway.env, timeout=120)


def events(gateway: ServerProcess, session: str) -> list[dict[str, Any]]:
    listed = chronicle("events", session, "--json", env=gateway.env)
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def session_of(result: subprocess.CompletedProcess[str]) -> str:
    found = STARTED.search(result.stderr)
    assert found, result.stderr
    return found.group(1)


def test_an_sdk_agent_is_recorded_whole_and_verifies(
    gateway: ServerProcess, upstream: FakeLlmServer, workspace: Path
) -> None:
    upstream.script(Reply(content="one"), Reply(content="two"))
    result = record(gateway, workspace, sys.executable, "agent.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "one two\n"  # the agent's stdout is the agent's alone
    session = session_of(result)
    log = events(gateway, session)
    kinds = [event["kind"] for event in log]
    assert kinds == [
        "session.created",
        "workspace.snapshot",
        "agent.state",
        "llm.call",
        "llm.call",
        "agent.state",
        "workspace.diff",
    ], kinds
    created, snapshot, running, first, second, ended, diff = (e["payload"] for e in log)
    assert created["config"]["agent"] == "external"
    assert created["config"]["command"] == [sys.executable, "agent.py"]
    assert created["config"]["workspace"] == str(workspace)
    assert {f["path"] for f in snapshot["files"]} == {"agent.py", "README"}
    assert running["state"] == "running" and "agent.py" in running["reason"]
    assert [first["response"]["content"], second["response"]["content"]] == ["one", "two"]
    assert (ended["state"], ended["exit_code"]) == ("finished", 0)
    assert ended["wall_seconds"] > 0
    assert diff["changed"] == ["answer.txt"] and "+one two" in diff["diff"]
    assert gateway.env["CHRONICLE_LLM_API_KEY"] == SERVER_KEY  # what the fake model takes
    verified = chronicle("verify", session, env=gateway.env)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_an_anthropic_sdk_agent_finds_the_gateway_too(
    gateway: ServerProcess, upstream: FakeLlmServer, workspace: Path
) -> None:
    """ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY: the official anthropic SDK's call is
    recorded in the run's session, with no header and no key of its own."""
    agent = (
        "import anthropic\n"
        "reply = anthropic.Anthropic().messages.create(\n"
        "    model='scripted', max_tokens=50, messages=[{'role': 'user', 'content': 'hi'}]\n"
        ")\n"
        "print(reply.content[0].text)\n"
    )
    upstream.script(Reply(content="hello"))
    result = record(gateway, workspace, sys.executable, "-c", agent)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello\n"
    calls = [e for e in events(gateway, session_of(result)) if e["kind"] == "llm.call"]
    assert [call["payload"]["response"]["content"] for call in calls] == ["hello"]


def test_the_commands_exit_code_is_records(
    gateway: ServerProcess, upstream: FakeLlmServer, workspace: Path
) -> None:
    """Recorded by an admin, whose token only the owner's login may make."""
    upstream.script(Reply(content="a"), Reply(content="b"))
    result = record(gateway, workspace, sys.executable, "agent.py", "3", user=ADMIN)
    assert result.returncode == 3, result.stderr
    ended = [
        e["payload"] for e in events(gateway, session_of(result)) if e["kind"] == "agent.state"
    ]
    assert (ended[-1]["state"], ended[-1]["exit_code"]) == ("error", 3)
    assert "exited with code 3" in ended[-1]["reason"]


def test_a_named_session_takes_each_run(
    gateway: ServerProcess, upstream: FakeLlmServer, workspace: Path
) -> None:
    upstream.script(*(Reply(content=word) for word in ("a", "b", "c", "d")))
    first = record(gateway, workspace, sys.executable, "agent.py", session="nightly")
    second = record(gateway, workspace, sys.executable, "agent.py", session="nightly")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    session = session_of(first)
    assert session_of(second) == session
    kinds = [event["kind"] for event in events(gateway, session)]
    assert kinds.count("llm.call") == 4 and kinds.count("workspace.diff") == 2
    assert kinds.count("session.created") == 1


def test_a_missing_command_is_127_and_a_sentence(gateway: ServerProcess, workspace: Path) -> None:
    result = record(gateway, workspace, "no-such-agent-24")
    assert result.returncode == 127
    assert "'no-such-agent-24' was not found" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_server_is_a_sentence(gateway: ServerProcess, workspace: Path) -> None:
    result = chronicle(
        "record", "--user", USER, "--url", "http://127.0.0.1:9", "--", sys.executable, "-V",
        env=gateway.env,
    )  # fmt: skip
    assert result.returncode == 1
    assert "no Chronicle server answers at http://127.0.0.1:9" in result.stderr


def test_a_session_is_live_while_its_command_runs_and_ctrl_c_reaches_the_command(
    gateway: ServerProcess, workspace: Path
) -> None:
    """The page's session list shows the session running while the command runs; SIGINT to
    ``chronicle record`` (no terminal here) goes on to the command, whose end is recorded as
    stopped, and record exits as the command did (130)."""
    waiting = "import time; print('ready', flush=True); time.sleep(120)"
    process = chronicle_popen(
        ["record", "--user", USER, "--url", gateway.url,
         "--workspace", str(workspace), "--", sys.executable, "-c", waiting],
        env=gateway.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    session = next(
        found.group(1) for line in process.stderr if (found := STARTED.search(line)) is not None
    )
    assert process.stdout.readline() == "ready\n"
    headers = {"Authorization": f"Bearer {gateway.token(USER)}"}

    def state() -> str | None:
        answer = httpx.get(f"{gateway.url}/api/sessions/{session}", headers=headers)
        return answer.json()["state"] if answer.status_code == 200 else None

    asyncio.run(until(lambda: state() == "running", timeout=30, what="a running session"))
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130
    ended = [e["payload"] for e in events(gateway, session) if e["kind"] == "agent.state"]
    assert (ended[-1]["state"], ended[-1]["exit_code"]) == ("stopped", 130)
    assert "SIGINT" in ended[-1]["reason"]
    asyncio.run(until(lambda: state() == "stopped", timeout=30, what="a stopped session"))


#: An agent that counts the SIGINTs it gets (each one's delivery writes a byte to the wakeup
#: pipe, where Python's handlers would run once for two that come close together).
COUNTING = textwrap.dedent(
    """
    import os, select, signal, sys, time
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.signal(signal.SIGINT, lambda *_: None)
    signal.set_wakeup_fd(write)
    print("ready", flush=True)
    select.select([read], [], [])
    time.sleep(1)  # the window a second, forwarded SIGINT would arrive in (none must)
    sys.exit(10 + len(os.read(read, 100)))
    """
)


def test_ctrl_c_at_a_terminal_reaches_the_command_once(
    gateway: ServerProcess, workspace: Path
) -> None:
    """Ctrl-C typed at a real terminal (a pty) reaches the command, and ``chronicle record``
    lives on to exit with its code. The terminal signals the whole foreground group, so record
    sends no second SIGINT (one sent a few milliseconds later may merge with the first before
    it is delivered, so a regression there shows in most runs, not all)."""
    argv = [sys.executable, "-m", "app.cli", "record", "--user", USER, "--url", gateway.url,
            "--workspace", str(workspace), "--", sys.executable, "-c", COUNTING]  # fmt: skip
    pid, terminal = pty.fork()  # the child leads a session whose controlling terminal is this
    if pid == 0:
        os.execve(sys.executable, argv, gateway.env)
    try:
        seen = b""
        while b"ready" not in seen:
            chunk = os.read(terminal, 4096)
            assert chunk, seen
            seen += chunk
        os.write(terminal, b"\x03")  # Ctrl-C, as typed
        _, status = os.waitpid(pid, 0)
    finally:
        with contextlib.suppress(OSError):
            os.close(terminal)
    assert os.waitstatus_to_exitcode(status) == 11, seen


def test_the_commands_token_reaches_its_session_only(
    gateway: ServerProcess, workspace: Path
) -> None:
    """A call that names another session with the scoped token is refused (403)."""
    elsewhere = textwrap.dedent(
        """
        import openai, sys
        client = openai.OpenAI(default_headers={"X-Chronicle-Session": "elsewhere"})
        try:
            client.chat.completions.create(
                model="scripted", messages=[{"role": "user", "content": "x"}]
            )
        except openai.PermissionDeniedError as exc:
            print(exc.message)
            sys.exit(7)
        """
    )
    result = record(gateway, workspace, sys.executable, "-c", elsewhere)
    assert result.returncode == 7, result.stdout + result.stderr
    assert "this token is for session " + session_of(result) in result.stdout
    assert [e["kind"] for e in events(gateway, session_of(result))].count("llm.call") == 0


def test_the_commands_token_reaches_the_model_gateway_and_nothing_else(
    gateway: ServerProcess, workspace: Path
) -> None:
    """The command can read its token (it is its API key): with it, the rest of its user's
    API (its sessions, a new session, a browser login) is refused, 403; the model
    gateway still answers. Before, that token was its user's whole API."""
    probe = textwrap.dedent(
        """
        import json, os, httpx
        base = os.environ["OPENAI_BASE_URL"].removesuffix("/v1")
        key = os.environ["OPENAI_API_KEY"]
        bearer = {"Authorization": "Bearer " + key}
        answers = {
            "models": httpx.get(base + "/v1/models", headers=bearer).status_code,
            "sessions": httpx.get(base + "/api/sessions", headers=bearer).status_code,
            "create": httpx.post(base + "/api/sessions", headers=bearer, json={}).status_code,
            "login": httpx.post(base + "/api/login", json={"token": key},
                                headers={"Origin": base}).status_code,
        }
        refused = httpx.get(base + "/api/sessions", headers=bearer).json()
        print(json.dumps({"answers": answers, "detail": refused.get("detail", "")}))
        """
    )
    result = record(gateway, workspace, sys.executable, "-c", probe)
    assert result.returncode == 0, result.stdout + result.stderr
    shown = json.loads(result.stdout.strip().splitlines()[-1])
    assert shown["answers"] == {"models": 200, "sessions": 403, "create": 403, "login": 403}
    assert "reaches the model gateway (/v1/...) only" in shown["detail"]
