"""A real coding agent from PyPI under ``chronicle record``: mini-swe-agent fixes an
off-by-one in a small git repository, its model a scripted fake behind a real ``chronicle
serve``; every call it made is an ``llm.call`` of the session, with mini's own system prompt,
and the session's workspace diff is the fix (tests/support/coding_agents.py says how mini is
installed and run)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle
from tests.support.coding_agents import (
    FINISH,
    RUN_TESTS,
    SYSTEM_PROMPT,
    config_with_one_byte_changed,
    fixing_replies,
    make_repository,
    mini_command,
    mini_environment,
    mini_path,
    unittest_passes,
)
from tests.support.fake_llm import FakeLlmServer
from tests.support.postgres import PgServer
from tests.support.record_gateway import SERVER_KEY, fake_model, recording_server

USER = "mini"
STARTED = re.compile(r"recording session ([0-9a-f-]{36})")


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
    mini_path()  # skip before starting anything when mini is not installed
    root = tmp_path_factory.mktemp("mini-gateway")
    yield from recording_server(pg_server, pg_template, root, upstream, users=((USER, False),))


@dataclass
class Recorded:
    result: subprocess.CompletedProcess[str]
    session: str
    repository: Path
    #: What mini's calls sent the model, as it received them.
    requests: list[dict[str, Any]]


def record(
    gateway: ServerProcess, repository: Path, home: Path, *options: str, config: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``chronicle record [OPTIONS] --workspace REPOSITORY -- mini ...``."""
    return chronicle(
        "record", "--user", USER, "--url", gateway.url, *options,
        "--workspace", str(repository), "--", *mini_command(config),
        env=mini_environment(gateway.env, home), timeout=180,
    )  # fmt: skip


def session_of(result: subprocess.CompletedProcess[str]) -> str:
    found = STARTED.search(result.stderr)
    assert found, result.stderr
    return found.group(1)


@pytest.fixture(scope="module")
def recorded(
    gateway: ServerProcess, upstream: FakeLlmServer, tmp_path_factory: pytest.TempPathFactory
) -> Recorded:
    """mini's run, recorded; then the model stops, so that any later call sent to it fails."""
    root = tmp_path_factory.mktemp("mini")
    repository = make_repository(root / "repo")
    assert not unittest_passes(repository)
    upstream.script(*fixing_replies())
    result = record(gateway, repository, root / "home")
    requests = list(upstream.requests)
    upstream.stop()
    return Recorded(result, session_of(result), repository, requests)


def events(gateway: ServerProcess, session: str) -> list[dict[str, Any]]:
    listed = chronicle("events", session, "--json", env=gateway.env)
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def messages(gateway: ServerProcess, token: str, session: str, seq: int) -> list[dict[str, Any]]:
    """The prompt of the session's model call at ``seq``, as the page shows it."""
    view = httpx.get(
        f"{gateway.url}/api/sessions/{session}/model-calls/{seq}",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert view.status_code == 200, view.text
    found: list[dict[str, Any]] = view.json()["messages"]
    return found


def test_mini_fixes_the_bug_and_each_of_its_calls_is_recorded(
    gateway: ServerProcess, recorded: Recorded
) -> None:
    assert recorded.result.returncode == 0, recorded.result.stdout + recorded.result.stderr
    log = events(gateway, recorded.session)
    kinds = [event["kind"] for event in log]
    assert kinds == [
        "session.created", "workspace.snapshot", "agent.state",
        "llm.call", "llm.call", "llm.call",
        "agent.state", "workspace.diff",
    ], kinds  # fmt: skip
    created = log[0]["payload"]["config"]
    assert created["agent"] == "external" and created["command"][-1].startswith("test_calc.py")
    calls = [event for event in log if event["kind"] == "llm.call"]
    commands = [
        json.loads(call["payload"]["response"]["tool_calls"][0]["arguments"])["command"]
        for call in calls
    ]
    assert commands[0] == RUN_TESTS and commands[-1] == FINISH
    token = gateway.token(USER)
    prompts = [messages(gateway, token, recorded.session, call["seq"]) for call in calls]
    assert [len(prompt) for prompt in prompts] == [2, 4, 6]  # system, task, then call + result
    for prompt in prompts:
        assert prompt[0]["role"] == "system" and prompt[0]["content"] == SYSTEM_PROMPT
    # what the agent saw of its commands is what it sent back: the tests failing, then passing
    assert "FAILED (failures=1)" in prompts[1][-1]["content"]
    assert "OK" in prompts[2][-1]["content"]
    # every call reached the model with the server's key, never the agent's token
    assert len(recorded.requests) == 3
    assert {request["_authorization"] for request in recorded.requests} == {f"Bearer {SERVER_KEY}"}
    ended, diff = log[-2]["payload"], log[-1]["payload"]
    assert (ended["state"], ended["exit_code"]) == ("finished", 0)
    assert diff["changed"] == ["calc.py"], diff
    assert "+    return sum(range(1, n + 1))" in diff["diff"]
    assert unittest_passes(recorded.repository)
    verified = chronicle("verify", recorded.session, env=gateway.env)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def replay_result(gateway: ServerProcess, replayed: subprocess.CompletedProcess[str]) -> Any:
    """The ``replay.result`` that ends the replay's own session."""
    log = events(gateway, session_of(replayed))
    assert log[-1]["kind"] == "replay.result", [event["kind"] for event in log]
    return log[-1]["payload"]


def test_mini_replays_from_its_recording_with_the_model_stopped(
    gateway: ServerProcess, recorded: Recorded, tmp_path: Path
) -> None:
    """The same command on a fresh copy of the repository: the gateway answers every call
    from the recording (the model is stopped), and mini fixes the bug again."""
    assert recorded.result.returncode == 0, recorded.result.stderr
    repository = make_repository(tmp_path / "repo")
    replayed = record(gateway, repository, tmp_path / "home", "--replay", recorded.session)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "3 model calls served, matched" in replayed.stderr
    result = replay_result(gateway, replayed)
    assert result["matched"] is True and result["model_calls"] == 0
    assert (result["steps_recorded"], result["steps_served"], result["steps_matched"]) == (3, 3, 3)
    assert unittest_passes(repository)


def test_one_byte_of_minis_system_prompt_is_a_typed_divergence(
    gateway: ServerProcess, recorded: Recorded, tmp_path: Path
) -> None:
    """mini's own configuration file, its system prompt ending in ``!`` instead of ``.``."""
    assert recorded.result.returncode == 0, recorded.result.stderr
    repository = make_repository(tmp_path / "repo")
    changed = config_with_one_byte_changed(tmp_path)
    replayed = record(
        gateway, repository, tmp_path / "home", "--replay", recorded.session, config=changed
    )
    assert replayed.returncode == 3, replayed.stdout + replayed.stderr
    assert "diverged (request): model call 1: prompt message 0 (system) differs" in (
        replayed.stderr
    )
    assert f"-{SYSTEM_PROMPT}\n" in replayed.stderr
    assert f"+{SYSTEM_PROMPT[:-1]}!\n" in replayed.stderr
    result = replay_result(gateway, replayed)
    assert result["matched"] is False and result["model_calls"] == 0
    divergence = result["divergence"]
    assert (divergence["kind"], divergence["step"]) == ("request", 1)
    assert (divergence["message"]["index"], divergence["message"]["recorded_role"]) == (0, "system")
    assert not unittest_passes(repository)  # stopped at its first call: nothing was changed
