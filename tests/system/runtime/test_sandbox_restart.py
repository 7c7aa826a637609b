"""A sandbox killed in the middle of a session (its processes, or its container): the run
restarts it and goes on, or, past the restart budget, ends in ``error``. Before the action
worker every later action answered "the sandbox is unavailable" and the run could still end
"finished" with exit 0.

The real controller, executor and sandbox, with litellm against the fake model server; the
model "thinks" for a few seconds while the test kills the sandbox, so the death is found by
the executor's heartbeat between two actions.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import docker
import pytest

from app.config import Settings
from app.runtime.docker.runtime import container_name
from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore, RecordedEvent
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.processes import kill_with_argument
from tests.support.waiting import wait_for_event

THINKING = 4.0  # seconds the model takes for the step during which the sandbox is killed


def restart_settings(fake: FakeLlmServer, tmp_path: Path, **extra: object) -> Settings:
    """A heartbeat every 0.3 s: the death is found while the model thinks."""
    return settings_for(fake, tmp_path, sandbox_heartbeat_interval=0.3, **extra)


async def kill_sandbox_after_first_output(
    store: EventStore, session: uuid.UUID, kind: str, workspace: Path
) -> None:
    await wait_for_event(store, session, lambda e: e.kind == "run.output", timeout=120)
    if kind == "docker":
        await asyncio.to_thread(
            lambda: docker.from_env().containers.get(container_name(session)).kill()
        )
    else:  # the jail and the action server: every process with the workspace as argument
        kill_with_argument(str(workspace))


async def run_and_kill(
    store: EventStore, settings: Settings, kind: str, workspace: Path
) -> tuple[str, list[RecordedEvent]]:
    session = uuid.uuid4()
    killer = asyncio.create_task(kill_sandbox_after_first_output(store, session, kind, workspace))
    _, outcome = await run_session(
        store, settings, SessionOptions(workspace=workspace, runtime=kind),
        task="Work in the shell.", session_id=session,
    )  # fmt: skip
    await killer
    return outcome, await store.read(session)


@pytest.mark.parametrize("kind", ["local", "docker"])
async def test_a_killed_sandbox_is_restarted_and_the_session_goes_on(
    kind: str,
    request: pytest.FixtureRequest,
    store: EventStore,
    fake_llm: FakeLlmServer,
    tmp_path: Path,
) -> None:
    if kind == "docker":
        request.getfixturevalue("docker_ready")
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="export MARK=old; echo one")]),
        Reply(tool_calls=[tool_call("execute_bash", command="echo [$MARK]")], delay=THINKING),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    outcome, events = await run_and_kill(
        store, restart_settings(fake_llm, tmp_path), kind, tmp_path / "ws"
    )
    assert outcome == "finished"
    kinds = [e.kind for e in events]
    assert kinds.count("runtime.restarted") == 1 and "runtime.failed" not in kinds
    restarted = next(e for e in events if e.kind == "runtime.restarted")
    assert restarted.payload["runtime"] == kind and restarted.payload["restart"] == 1
    outputs = [e.payload["output"] for e in events if e.kind == "run.output"]
    assert outputs == ["one\n", "[]\n"]  # the second ran in a new shell
    # The model was told, at its place in the conversation, that its processes are gone.
    told = json.dumps(fake_llm.requests[2]["messages"])
    assert "Every process you started in it is gone" in told


async def test_past_the_restart_budget_the_run_ends_in_error(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo one")]),
        Reply(tool_calls=[tool_call("execute_bash", command="echo two")], delay=THINKING),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    settings = restart_settings(fake_llm, tmp_path, sandbox_max_restarts=0)
    outcome, events = await run_and_kill(store, settings, "local", tmp_path / "ws")
    assert outcome == "error"
    assert [e.kind for e in events if e.kind.startswith("runtime.")] == [
        "runtime.starting",
        "runtime.ready",
        "runtime.failed",
    ]
    final = events[-2]
    assert (final.kind, final.payload["state"]) == ("agent.state", "error")
    assert "restarts are off (sandbox_max_restarts = 0)" in final.payload["reason"]
    assert not any(e.kind == "finish" for e in events)
