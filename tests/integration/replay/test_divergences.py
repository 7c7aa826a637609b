"""Every kind of divergence, on recordings written here step by step as the controller writes
them (the request prepared by a real LlmGateway, the actions made by the real agent from the
reply), so a test can say exactly what the recorded agent did. Real PostgreSQL; nothing runs:
a replay starts no sandbox and calls no model."""

from __future__ import annotations

import json
import uuid

import pytest

from app.events import Annotation, LlmCall, LlmResponse, Message, Run, RuntimeRestarted, ToolCall
from app.replay import AgentConfig, ReplayError, replay
from app.store import EventStore
from tests.support.written_sessions import Recorder


async def fix_and_finish(recorder: Recorder) -> None:
    await recorder.start()
    await recorder.state("running")
    [run] = await recorder.call(("execute_bash", {"command": "pytest -q"}))
    await recorder.output(run, "1 failed", exit_code=1)
    [run] = await recorder.call(("execute_bash", {"command": "pytest -q -x"}))
    await recorder.output(run, "1 passed")
    await recorder.call(("finish", {"message": "fixed"}))
    await recorder.state("finished", "the agent called finish")


async def test_a_recording_written_like_the_controller_writes_replays_to_a_match(
    store: EventStore,
) -> None:
    recorder = Recorder(store)
    await fix_and_finish(recorder)
    result = await replay(store, recorder.session)
    assert result.matched and result.divergence is None, result.divergence
    assert (result.steps_served, result.steps_matched, result.outcome) == (3, 3, "finished")


async def test_an_action_unlike_the_recorded_one_is_not_answered_and_stops_the_replay(
    store: EventStore,
) -> None:
    # The recorded agent turned the reply's `pytest -q` into `pytest -q --lf` (an older
    # version, say); today's agent makes `pytest -q` of the same reply.
    recorder = Recorder(store)
    await recorder.start()
    events = await store.read(recorder.session)
    request = recorder.gateway.prepare(recorder.agent.messages(events), recorder.agent.tools())
    await recorder.gateway.store_prompt(request)
    reply = ToolCall(id="call_1", name="execute_bash", arguments='{"command": "pytest -q"}')
    call = LlmCall(
        model=recorder.llm.model,
        params={**request.params, "base_url": recorder.llm.base_url},
        fingerprint=request.fingerprint,
        prompt=request.prompt,
        tools=request.tools_hash,
        response=LlmResponse(tool_calls=[reply], finish_reason="tool_calls"),
    )
    call_seq = events[-1].seq + 1
    older = Run(command="pytest -q --lf", tool_call_id="call_1", cause=call_seq)
    [_, action] = await recorder.append(call, older)
    await recorder.output(action.seq, "SECRET RECORDED OUTPUT")
    await recorder.call(("finish", {"message": "done"}))
    await recorder.state("finished")

    for mode in ("strict", "positional"):
        result = await replay(store, recorder.session, mode=mode)  # type: ignore[arg-type]
        divergence = result.divergence
        assert divergence is not None and divergence.kind == "action", mode
        assert (divergence.step, divergence.recorded_seq, divergence.index) == (1, action.seq, 0)
        assert [(c.field, c.recorded, c.new) for c in divergence.fields] == [
            ("command", "pytest -q --lf", "pytest -q")
        ]
        assert result.steps_served == 1 and result.steps_matched == 0
        replayed = await store.read(result.session_id)
        answer = next(e for e in replayed if e.kind in ("run.output", "error") and e.cause)
        assert answer.kind == "error" and "replay diverged" in answer.payload["message"]
        assert "SECRET RECORDED OUTPUT" not in json.dumps([e.payload for e in replayed])
        # The run ends there, in error: the append that recorded the action answered it with
        # the error and stopped the run (as a live action worker's stop ends one).
        state = [e for e in replayed if e.kind == "agent.state"][-1]
        assert state.payload["state"] == "error"
        assert state.payload["reason"] == f"the replay diverged: {divergence.summary}"
        assert replayed[-1].kind == "replay.result"
        assert replayed[-1].payload["divergence"]["fields"][0]["field"] == "command"


async def test_a_call_the_recording_does_not_have_is_an_extra_call(store: EventStore) -> None:
    recorder = Recorder(store)
    await recorder.start()
    await recorder.state("running")
    [run] = await recorder.call(("execute_bash", {"command": "pytest -q"}))
    await recorder.output(run, "1 failed", exit_code=1)
    # The recording ends here (its process was killed): nothing says what came next.
    result = await replay(store, recorder.session)
    divergence = result.divergence
    assert divergence is not None and divergence.kind == "extra_call"
    assert divergence.step == 2 and result.steps_matched == 1
    assert result.recorded_outcome is None and result.outcome is None


async def test_stopping_before_the_recording_did_is_a_missing_call(store: EventStore) -> None:
    recorder = Recorder(store)
    await fix_and_finish(recorder)
    result = await replay(store, recorder.session, AgentConfig(max_iterations=1))
    divergence = result.divergence
    assert divergence is not None and divergence.kind == "missing_call"
    assert (divergence.step, divergence.remaining, divergence.outcome) == (2, 2, "stopped")
    assert result.steps_served == 1 and result.outcome == "stopped"


async def stuck_recording(store: EventStore) -> Recorder:
    """Four times the same failing command with the same result: stuck detection ends it."""
    recorder = Recorder(store, max_iterations=10)
    await recorder.start()
    await recorder.state("running")
    for _ in range(4):
        [run] = await recorder.call(("execute_bash", {"command": "make"}))
        await recorder.output(run, "make: *** No targets.  Stop.", exit_code=2)
    await recorder.state(
        "error", "the agent looks stuck: it repeated the same action with the same result 4 times"
    )
    return recorder


async def test_the_controller_ending_otherwise_is_an_outcome_divergence(store: EventStore) -> None:
    recorder = await stuck_recording(store)
    # The served results carry replayed_from, and still count as "the same result" (before
    # stuck detection ignored that marker, this replay wanted a fifth call: extra_call).
    same = await replay(store, recorder.session)
    assert same.matched, same.divergence
    assert same.outcome == "error"

    changed = AgentConfig(stuck_detection=False, max_iterations=4)
    result = await replay(store, recorder.session, changed)
    divergence = result.divergence
    assert divergence is not None and divergence.kind == "outcome"
    assert (divergence.recorded_state, divergence.new_state) == ("error", "stopped")
    assert "looks stuck" in divergence.recorded_reason
    assert "iteration limit (4)" in divergence.new_reason
    assert result.steps_matched == 4


async def test_the_user_coming_back_is_fed_where_it_was_recorded(store: EventStore) -> None:
    recorder = Recorder(store)
    await recorder.start("Fix the bug.")
    await recorder.state("running")
    await recorder.call(content="Which file should I change?")
    await recorder.state("awaiting_user_input", "the agent asked for your input")
    await recorder.append(Message(content="main.py"))
    await recorder.state("running")
    await recorder.call(("finish", {"message": "changed main.py"}))
    await recorder.state("finished", "the agent called finish")

    result = await replay(store, recorder.session)
    assert result.matched, result.divergence
    replayed = await store.read(result.session_id)
    said = [(e.source, e.payload["content"]) for e in replayed if e.kind == "message"]
    assert said == [
        ("user", "Fix the bug."),
        ("agent", "Which file should I change?"),
        ("user", "main.py"),
    ]
    states = [e.payload["state"] for e in replayed if e.kind == "agent.state"]
    assert "awaiting_user_input" in states and states[-1] == "finished"


async def test_what_cannot_be_replayed_is_refused_with_a_reason(store: EventStore) -> None:
    with pytest.raises(ReplayError, match="no session"):
        await replay(store, uuid.uuid4())
    recorder = Recorder(store)
    await fix_and_finish(recorder)
    with pytest.raises(ReplayError, match="no agent 'other'"):
        await replay(store, recorder.session, AgentConfig(agent="other"))
    with pytest.raises(ReplayError, match="no tool teleport"):
        await replay(store, recorder.session, AgentConfig(tools=["teleport"]))
    with pytest.raises(ReplayError, match="unknown model parameter top_k"):
        await replay(store, recorder.session, AgentConfig(model_params={"top_k": 3}))
    done = await replay(store, recorder.session)
    with pytest.raises(ReplayError, match="itself a replay"):
        await replay(store, done.session_id)


async def test_a_model_parameter_override_is_a_params_divergence(store: EventStore) -> None:
    recorder = Recorder(store)
    await fix_and_finish(recorder)
    result = await replay(store, recorder.session, AgentConfig(model_params={"temperature": 0.5}))
    divergence = result.divergence
    assert divergence is not None and divergence.kind == "request"
    assert divergence.params is not None and divergence.message is None
    assert divergence.params.recorded["temperature"] == 0.0
    assert divergence.params.new["temperature"] == 0.5


async def test_a_sandbox_restart_the_model_read_is_served_before_the_answer(
    store: EventStore,
) -> None:
    recorder = Recorder(store)
    await recorder.start()
    await recorder.state("running")
    [run] = await recorder.call(("execute_bash", {"command": "make"}))
    note = "The sandbox was restarted: every process you started is gone."
    await recorder.append(RuntimeRestarted(runtime="local", reason="died", message=note))
    await recorder.output(run, "make: ok")
    await recorder.call(("finish", {"message": "built"}))
    await recorder.state("finished")

    result = await replay(store, recorder.session)
    # Without the restart served, the second request lacks the note: a request divergence.
    assert result.matched, result.divergence
    replayed = await store.read(result.session_id)
    kinds = [e.kind for e in replayed]
    assert kinds.index("runtime.restarted") == kinds.index("run.output") - 1
    restarted = replayed[kinds.index("runtime.restarted")]
    assert restarted.payload["message"] == note and restarted.payload["replayed_from"]


async def test_a_run_without_stuck_detection_replays_without_it(store: EventStore) -> None:
    recorder = Recorder(store, stuck_detection=False)  # `chronicle run --no-stuck-detection`
    await recorder.start()
    await recorder.state("running")
    for _ in range(5):
        [run] = await recorder.call(("execute_bash", {"command": "make"}))
        await recorder.output(run, "make: *** No targets.  Stop.", exit_code=2)
    await recorder.call(("finish", {"message": "gave up"}))
    await recorder.state("finished", "the agent called finish")
    # Before the setting was recorded, the replay found the agent stuck at the 4th result.
    result = await replay(store, recorder.session)
    assert result.matched, result.divergence
    checked = await replay(store, recorder.session, AgentConfig(stuck_detection=True))
    assert checked.divergence is not None and checked.divergence.kind == "missing_call"
    assert checked.outcome == "error"


async def test_another_registered_agent_is_the_one_replayed_and_diverges_readably(
    store: EventStore,
) -> None:
    # --agent shell-only: its first request differs from CodeAct's (prompt and tools), and
    # served the recorded replies anyway (positional), it cannot make the recorded edit.
    recorder = Recorder(store)
    await recorder.start()
    await recorder.state("running")
    [run] = await recorder.call(("execute_bash", {"command": "cat add.py"}))
    await recorder.output(run, "def add(a, b):\n    return a - b\n")
    [edit] = await recorder.call(
        (
            "str_replace_editor",
            {"command": "str_replace", "path": "add.py", "old_str": "-", "new_str": "+"},
        )
    )
    await recorder.append_answer(edit, "file.edit.output", path="add.py", diff="-a - b\n+a + b")
    await recorder.call(("finish", {"message": "fixed"}))
    await recorder.state("finished", "the agent called finish")

    strict = await replay(store, recorder.session, AgentConfig(agent="shell-only"))
    request = strict.divergence
    assert request is not None and request.kind == "request" and request.step == 1
    assert request.message is not None and request.message.recorded_role == "system"
    assert "+You are Chronicle's shell agent." in request.message.diff
    assert request.tools is not None and request.tools.removed == ["str_replace_editor", "think"]
    [created] = await store.read(strict.session_id, limit=1)
    assert created.payload["config"]["agent"] == "shell-only"
    assert created.payload["config"]["agent_config"]["agent"] == "shell-only"

    positional = await replay(
        store, recorder.session, AgentConfig(agent="shell-only"), mode="positional"
    )
    action = positional.divergence
    assert action is not None and action.kind == "action" and action.step == 2
    assert action.recorded is not None and action.recorded["kind"] == "file.edit"
    assert action.new is not None and action.new["kind"] == "error"
    assert "there is no tool 'str_replace_editor'" in action.new["message"]
    # "an error", not "a error" (issue 23)
    assert "the agent made an error where the recording has a file.edit" in action.summary


async def test_annotations_are_no_step_and_no_divergence_in_either_mode(store: EventStore) -> None:
    """Reviewers annotated the recording while it ran (between a command and its next model
    call), on its model calls and on the whole session after it ended: a strict and a
    positional replay serve, count and compare the same three steps as without them."""
    recorder = Recorder(store)
    await recorder.start()
    await recorder.state("running")
    [run] = await recorder.call(("execute_bash", {"command": "pytest -q"}))
    await recorder.output(run, "1 failed", exit_code=1)
    call_seq = run - 1
    await recorder.append(Annotation(label="good", target_seq=call_seq, user="ada"))
    [run] = await recorder.call(("execute_bash", {"command": "pytest -q -x"}))
    await recorder.append(Annotation(label="unsafe command", target_seq=run, user="bo"))
    await recorder.output(run, "1 passed")
    await recorder.call(("finish", {"message": "fixed"}))
    await recorder.state("finished", "the agent called finish")
    await recorder.append(Annotation(label="reviewed", comment="fine", user="ada"))

    for mode in ("strict", "positional"):
        result = await replay(store, recorder.session, mode=mode)  # type: ignore[arg-type]
        assert result.matched and result.divergence is None, (mode, result.divergence)
        assert (result.steps_served, result.steps_matched, result.outcome) == (3, 3, "finished")
        assert result.differences == [] and result.steps_recorded == 3, mode
        replayed = await store.read(result.session_id)
        assert "annotation" not in {e.kind for e in replayed}, mode
