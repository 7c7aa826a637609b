"""Forking a recorded session at a seq: the copy, the restored workspace, the recorded sandbox
actions run again in a real (local) sandbox, an environment divergence, then the fork goes on
live with the (fake) model."""

from __future__ import annotations

import subprocess
from pathlib import Path
from uuid import UUID

import pytest

from app.projections import SESSION_STATE, SessionState
from app.projections.sql.projection_store import ProjectionRows
from app.replay import replay
from app.sessions.fork import fork_session
from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore, RecordedEvent
from tests.support.agent_cli import agent_environment
from tests.support.agent_session import settings_for
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

BUDGET = 4096

SOURCE = [
    Reply(tool_calls=[tool_call("execute_bash", command="cat input.txt")]),
    Reply(tool_calls=[tool_call("execute_bash", command="echo second >> input.txt")]),
    Reply(tool_calls=[tool_call("execute_bash", command="wc -c big.log")]),
    Reply(tool_calls=[tool_call("finish", message="done")]),
]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True, capture_output=True,
    )  # fmt: skip


async def _record(
    store: EventStore,
    fake_llm: FakeLlmServer,
    tmp_path: Path,
    workspace: Path,
    runtime: str = "local",
) -> tuple[UUID, list[RecordedEvent]]:
    fake_llm.script(*SOURCE)
    settings = settings_for(fake_llm, tmp_path, workspace_snapshot_max_bytes=BUDGET)
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=workspace, runtime=runtime), task="look around"
    )
    assert outcome == "finished"
    return session, await store.read(session)


def _outputs(events: list[RecordedEvent]) -> list[RecordedEvent]:
    return [e for e in events if e.kind == "run.output"]


async def _check_fork(
    store: EventStore,
    fake_llm: FakeLlmServer,
    tmp_path: Path,
    source: UUID,
    recorded: list[RecordedEvent],
    at: int,
    name: str,
) -> tuple[UUID, list[RecordedEvent], Path]:
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="forked and done")]))
    settings = settings_for(fake_llm, tmp_path, workspace_snapshot_max_bytes=BUDGET)
    workspace = tmp_path / name
    fork, outcome, _ = await fork_session(
        store, settings, source, at, SessionOptions(workspace=workspace), message="carry on"
    )
    assert outcome == "finished"
    events = await store.read(fork)
    copied = [e for e in events if e.seq <= at]
    assert [(e.kind, e.source, e.cause) for e in copied] == [
        (e.kind, e.source, e.cause) for e in recorded[:at]
    ]
    assert [e.payload["replayed_from"] for e in copied] == list(range(1, at + 1))
    assert all(c.event_id != r.event_id for c, r in zip(copied, recorded, strict=False))
    created = events[0].payload
    assert created["forked_from"] == str(source) and created["forked_at"] == at
    assert created["config"]["workspace"] == str(workspace)
    live = [e for e in events if e.seq > at]
    assert any(e.kind == "message" and e.payload["content"] == "carry on" for e in live)
    assert any(e.kind == "finish" and e.payload["message"] == "forked and done" for e in live)
    assert (await store.verify(fork)).ok
    return fork, events, workspace


async def test_fork_a_plain_workspace_at_several_points(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "input.txt").write_text("first\n")
    (workspace / "big.log").write_bytes(b"x" * (BUDGET + 1))  # over the budget: not restored
    source, recorded = await _record(store, fake_llm, tmp_path, workspace)
    outputs = _outputs(recorded)

    # After the first command: nothing re-run changes the file; no divergence.
    fork, events, forked = await _check_fork(
        store, fake_llm, tmp_path, source, recorded, outputs[0].seq, "fork1"
    )
    assert (forked / "input.txt").read_text() == "first\n"
    assert not [e for e in events if e.kind == "environment.divergence"]

    # After the append: it ran again in the fork's sandbox.
    fork, events, forked = await _check_fork(
        store, fake_llm, tmp_path, source, recorded, outputs[1].seq, "fork2"
    )
    assert (forked / "input.txt").read_text() == "first\nsecond\n"
    assert not [e for e in events if e.kind == "environment.divergence"]

    # After `wc -c big.log`: the file was over the snapshot's budget, so it is not in the
    # restored workspace; the command now fails, which the fork reports.
    fork, events, forked = await _check_fork(
        store, fake_llm, tmp_path, source, recorded, outputs[2].seq, "fork3"
    )
    [divergence] = [e.payload for e in events if e.kind == "environment.divergence"]
    assert divergence["action_seq"] == outputs[2].cause
    assert (divergence["field"], divergence["recorded"]) == ("exit_code", 0)
    assert divergence["observed"] != 0
    # The session list (the session_state projection) shows it as a branch of its source.
    rows = ProjectionRows()
    for recorded_event in events:
        SessionState().apply(rows, recorded_event)
    row = rows.get(SESSION_STATE, fork)
    assert row is not None and row.forked_from == source


@pytest.mark.parametrize("runtime", ["local", "docker"])
async def test_fork_a_git_repository(
    runtime: str,
    request: pytest.FixtureRequest,
    store: EventStore,
    fake_llm: FakeLlmServer,
    tmp_path: Path,
) -> None:
    """Recorded and forked in a local jail or in Docker (where the source's workspace then
    belongs to the sandbox's uid, and the fork's clone must still read it)."""
    if runtime == "docker":
        request.getfixturevalue("docker_ready")
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "input.txt").write_text("first\n")
    _git(workspace, "init", "-q", "-b", "work")
    _git(workspace, "add", "input.txt")
    _git(workspace, "commit", "-q", "-m", "start")
    (workspace / "input.txt").write_text("first\n")
    (workspace / "untracked.txt").write_text("u\n")
    (workspace / "big.log").write_bytes(b"x" * (BUDGET + 1))
    source, recorded = await _record(store, fake_llm, tmp_path, workspace, runtime)
    outputs = _outputs(recorded)
    for number, output in enumerate(outputs[:2], start=1):
        _, events, forked = await _check_fork(
            store, fake_llm, tmp_path, source, recorded, output.seq, f"gitfork{number}"
        )
        assert (forked / ".git").is_dir() and (forked / "untracked.txt").read_text() == "u\n"
        expected = "first\n" if number == 1 else "first\nsecond\n"
        assert (forked / "input.txt").read_text() == expected
        [diff] = [e.payload for e in events if e.kind == "workspace.diff" and e.seq > output.seq]
        assert diff["reason"] == "finished"


async def test_chronicle_fork_from_the_command_line(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "input.txt").write_text("first\n")
    (workspace / "big.log").write_bytes(b"x" * (BUDGET + 1))
    source, recorded = await _record(store, fake_llm, tmp_path, workspace)
    at = _outputs(recorded)[2].seq
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="forked on the CLI")]))
    env = agent_environment(
        fake_llm, app_database_url, tmp_path, CHRONICLE_WORKSPACE_SNAPSHOT_MAX_BYTES=str(BUDGET)
    )
    forked = tmp_path / "cli-fork"
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("You are a forked agent.")
    asked = len(fake_llm.requests)
    done = chronicle(
        "fork", str(source), "go on", "--at", str(at), "--workspace", str(forked),
        "--model", "openai/cli-model", "--system-prompt", str(prompt),
        "--tools", "execute_bash,finish", "--model-param", "temperature=0.25", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (forked / "input.txt").read_text() == "first\nsecond\n"
    assert "environment.divergence" in done.stdout
    # the live part ran with the options, and the fork recorded them (a resume keeps them)
    [live] = fake_llm.requests[asked:]
    assert live["model"] == "cli-model" and live["temperature"] == 0.25
    assert live["messages"][0]["content"] == "You are a forked agent."
    assert [t["function"]["name"] for t in live["tools"]] == ["execute_bash", "finish"]
    fork = UUID(
        next(line for line in done.stdout.splitlines() if "session " in line).split()[1][:36]
    )
    config = (await store.read(fork))[0].payload["config"]
    assert config["model"] == "openai/cli-model" and config["tools"] == ["execute_bash", "finish"]
    bad = chronicle("fork", str(source), "--at", str(at - 1), env=env)
    assert bad.returncode == 1
    assert "falls between the run at seq" in bad.stderr and "fork at a seq after it" in bad.stderr
    # a tool the source does not have is refused before anything is restored
    unknown = tmp_path / "never-restored"
    bad = chronicle(
        "fork", str(source), "--at", str(at), "--tools", "rm_rf", "--workspace", str(unknown),
        env=env,
    )  # fmt: skip
    assert bad.returncode == 1 and "there is no tool rm_rf" in bad.stderr, bad.stderr
    assert not unknown.exists()


async def test_replay_on_divergence_forks_just_before_it(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "input.txt").write_text("first\n")
    source, recorded = await _record(store, fake_llm, tmp_path, workspace)
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="live after the fork")]))
    recorded_requests = len(fake_llm.requests)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("You are a terse agent.\nWorkspace: {workspace}\n")
    env = agent_environment(fake_llm, app_database_url, tmp_path)
    done = chronicle(
        "replay", str(source), "--system-prompt", str(prompt), "--tools", "execute_bash,finish",
        "--max-iterations", "7", "--model-param", "temperature=0.5", "--on-divergence", "fork",
        env=env,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr  # the replay still diverged
    first_call = next(e.seq for e in recorded if e.kind == "llm.call")
    assert f"forked {source} at seq {first_call - 1} into " in done.stdout
    assert ": finished" in done.stdout
    fork = UUID(done.stdout.split(" into ")[1].split(":")[0])
    events = await store.read(fork)
    assert events[0].payload["forked_at"] == first_call - 1
    assert any(e.kind == "finish" and e.payload["message"] == "live after the fork" for e in events)
    assert (await store.verify(fork)).ok
    # The live part ran with the replay's overrides (before, with the recorded prompt, all
    # four tools and the recorded temperature): the fake model saw them in its one request.
    [live] = fake_llm.requests[recorded_requests:]
    forked = events[0].payload["config"]["workspace"]
    assert live["messages"][0] == {
        "role": "system",
        "content": f"You are a terse agent.\nWorkspace: {forked}\n",
    }
    assert [t["function"]["name"] for t in live["tools"]] == ["execute_bash", "finish"]
    assert live["temperature"] == 0.5
    # ... and the fork recorded them, so a replay of the fork (no options) runs as it did.
    config = events[0].payload["config"]
    assert config["agent_config"]["system_prompt"] == prompt.read_text()
    assert (config["max_iterations"], config["tools"]) == (7, ["execute_bash", "finish"])
    again = await replay(store, fork)
    assert again.matched, again.divergence
