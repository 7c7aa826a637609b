"""Replaying recorded sessions: the real CodeActAgent and AgentController, the recording in
place of the model and the sandbox. Sessions are recorded here as every agent test records
them (a real local sandbox, litellm against the fake model server)."""

from __future__ import annotations

import json
from pathlib import Path

from app.events import parse_event
from app.replay import AgentConfig, replay
from app.store import EventStore
from tests.support.fake_llm import FakeLlmServer
from tests.support.recordings import record


async def test_a_recording_replays_to_a_match_without_the_model_or_the_sandbox(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    session = await record(store, fake_llm, tmp_path)
    asked = len(fake_llm.requests)
    fake_llm.stop()  # no model to call: a replay that called one would fail its calls
    (tmp_path / "ws" / "hello.py").unlink()  # nor a workspace: nothing runs

    result = await replay(store, session)

    assert result.matched, result.divergence
    assert result.divergence is None and result.differences == []
    assert (result.outcome, result.recorded_outcome) == ("finished", "finished")
    assert (result.steps_recorded, result.steps_served, result.steps_matched) == (5, 5, 5)
    assert result.model_calls == 0 and asked == 5
    assert not (tmp_path / "ws" / "hello.py").exists()

    recorded = await store.read(session)
    replayed = await store.read(result.session_id)
    created = replayed[0].payload
    assert created["replay_of"] == str(session)
    assert created["config"]["replay_mode"] == "strict"
    assert created["config"]["agent_config"]["agent"] == "codeact"
    # The same conversation: each model call asked what the recorded one asked.
    fingerprints = [e.payload["fingerprint"] for e in recorded if e.kind == "llm.call"]
    assert [e.payload["fingerprint"] for e in replayed if e.kind == "llm.call"] == fingerprints
    # Served events name what they were served from; the agent's own actions do not.
    served = {e.kind: e.payload.get("replayed_from") for e in replayed if e.cause}
    assert served["llm.call"] and served["run.output"] and served["file.edit.output"]
    assert "replayed_from" not in next(e for e in replayed if e.kind == "run").payload
    by_seq = {e.seq: e for e in recorded}
    for event in replayed:
        origin = event.payload.get("replayed_from")
        if origin is not None:
            assert by_seq[origin].kind == event.kind
    outputs = [e.payload["output"] for e in replayed if e.kind == "run.output"]
    assert "ZeroDivisionError" in outputs[0] and outputs[1] == "hello\n"
    # It ends as the recording did, then says how the replay went.
    assert [e.payload["state"] for e in replayed if e.kind == "agent.state"][-1] == "finished"
    last = replayed[-1]
    assert last.kind == "replay.result" and parse_event({"kind": last.kind, **last.payload})
    assert last.payload["matched"] is True and last.payload["model_calls"] == 0
    assert last.payload["steps_matched"] == 5 and last.payload["divergence"] is None
    assert (await store.verify(result.session_id)).ok


async def test_a_changed_system_prompt_is_a_request_divergence_in_strict_mode(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    session = await record(store, fake_llm, tmp_path)
    fake_llm.stop()
    changed = AgentConfig(system_prompt="You are a careful agent. Workspace: {workspace}")

    result = await replay(store, session, changed, mode="strict")

    assert not result.matched and result.steps_served == 0 and result.model_calls == 0
    divergence = result.divergence
    assert divergence is not None and divergence.kind == "request"
    assert divergence.step == 1
    assert divergence.message is not None
    assert (divergence.message.index, divergence.message.recorded_role) == (0, "system")
    assert "-You are Chronicle's coding agent." in divergence.message.diff
    assert "+You are a careful agent. Workspace: " + str(tmp_path / "ws") in divergence.message.diff
    assert divergence.tools is None and divergence.params is None
    replayed = await store.read(result.session_id)
    assert not [e for e in replayed if e.kind == "llm.call"]
    assert replayed[-1].kind == "replay.result"
    assert replayed[-1].payload["divergence"]["kind"] == "request"
    assert replayed[-1].payload["divergence"]["message"]["index"] == 0
    stopped = [e for e in replayed if e.kind == "agent.state"][-1]
    assert stopped.payload["state"] == "stopped" and "diverged" in stopped.payload["reason"]
    assert (await store.verify(result.session_id)).ok


async def test_positional_mode_serves_through_request_differences_and_reports_them(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    session = await record(store, fake_llm, tmp_path)
    fake_llm.stop()
    changed = AgentConfig(system_prompt="You are a careful agent. Workspace: {workspace}")

    result = await replay(store, session, changed, mode="positional")

    assert result.divergence is None and not result.matched  # not a stop, not a match
    assert result.outcome == "finished" and result.steps_served == 5
    assert result.steps_matched == 0  # every request differed (the prompt starts them all)
    assert [d.step for d in result.differences] == [1, 2, 3, 4, 5]
    assert all(d.kind == "request" and d.message and d.message.index == 0
               for d in result.differences)  # fmt: skip
    replayed = await store.read(result.session_id)
    assert len(replayed[-1].payload["differences"]) == 5


async def test_a_changed_action_stops_the_replay_with_an_action_divergence(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    session = await record(store, fake_llm, tmp_path)
    fake_llm.stop()
    # Without str_replace_editor, the recorded reply's first tool call is no action but an
    # error the model would read: the agent does something else with the same reply.
    changed = AgentConfig(tools=["execute_bash", "think", "finish"])

    result = await replay(store, session, changed, mode="positional")

    divergence = result.divergence
    assert divergence is not None and divergence.kind == "action"
    assert (divergence.step, divergence.index) == (1, 0)
    assert divergence.recorded is not None and divergence.recorded["kind"] == "file.edit"
    assert divergence.new is not None and divergence.new["kind"] == "error"
    assert "no tool 'str_replace_editor'" in json.dumps(divergence.new)
    fields = {change.field for change in divergence.fields}
    assert {"kind", "path", "message"} <= fields
    assert result.steps_served == 1 and not result.matched
    # The tool list differed too: reported (positional), not what stopped it.
    assert result.differences and result.differences[0].tools is not None
    assert result.differences[0].tools.removed == ["str_replace_editor"]
