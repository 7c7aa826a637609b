"""Reading a recording: its calls, what each led to, the answers, and the user's segments."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from app.events.platform_audit import PLATFORM_LOG_MARK
from app.events.prompts import PromptChainError
from app.replay.divergence import Divergence, ExtraCall, OutcomeDivergence
from app.replay.recording import Recording, RecordingError, list_pages, stream_recording
from app.store import RecordedEvent

SESSION = uuid.uuid4()


class Log:
    """Builds a session's recorded events in seq order."""

    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []

    def add(self, kind: str, source: str, cause: int | None = None, **payload: Any) -> int:
        seq = len(self.events) + 1
        self.events.append(
            RecordedEvent(
                global_position=seq,
                session_id=SESSION,
                seq=seq,
                event_id=uuid.uuid4(),
                tx=1,
                kind=kind,
                source=source,
                cause=cause,
                payload=payload,
                schema_version=1,
                created_at=datetime.now(UTC),
                hash=b"",
            )
        )
        return seq

    def state(self, state: str, reason: str = "", source: str = "agent") -> int:
        return self.add("agent.state", source, state=state, reason=reason)

    def call(self, **payload: Any) -> int:
        return self.add("llm.call", "agent", model="m", fingerprint="f", **payload)


async def read_recording(events: list[RecordedEvent]) -> Recording:
    """The recording read two events at a time, so every lookup crosses pages."""
    return await stream_recording(list_pages(events), page_events=2)


def started(log: Log, task: str = "Fix it.") -> None:
    log.add("session.created", "system", title="Fix it", config={"model": "m"})
    log.add("message", "user", content=task)


async def test_calls_consequences_and_answers() -> None:
    log = Log()
    started(log)
    log.state("running")
    first = log.call()
    run = log.add("run", "agent", first, command="ls")
    output = log.add("run.output", "environment", run, output="a.py", exit_code=0)
    second = log.call()
    log.add("finish", "agent", second, message="done")
    log.state("finished", "the agent called finish")
    recording = await read_recording(log.events)
    assert list(recording.call_seqs) == [first, second]
    assert [e.seq for e in await recording.consequences(first)] == [run]
    answer = await recording.answer(run)
    assert answer is not None and answer.seq == output
    assert recording.step_of(second) == 2
    assert recording.outcome == "finished" and recording.title == "Fix it"
    [segment] = recording.segments
    assert [e.kind for e in segment.feed] == ["message"] and segment.calls == 2


async def test_an_interrupted_call_answered_nothing_and_is_left_out() -> None:
    log = Log()
    started(log)
    log.call(error="interrupted before the model answered", error_kind="interrupted")
    log.state("stopped", "interrupted by SIGINT")
    again = log.call()
    log.add("finish", "agent", again, message="done")
    log.state("finished")
    recording = await read_recording(log.events)
    assert list(recording.call_seqs) == [again]
    assert len(recording.segments) == 1 and recording.outcome == "finished"


async def test_the_user_coming_back_starts_a_segment() -> None:
    log = Log()
    started(log)
    asked = log.call()
    log.add("message", "agent", asked, content="Which file?")
    log.state("awaiting_user_input", "the agent asked for your input")
    log.add("message", "user", content="main.py")
    done = log.call()
    log.add("finish", "agent", done, message="ok")
    log.state("finished", "the agent called finish")
    first, second = (await read_recording(log.events)).segments
    assert (first.end_state, first.calls) == ("awaiting_user_input", 1)
    assert [e.payload["content"] for e in second.feed] == ["main.py"]
    assert (second.end_state, second.calls) == ("finished", 2)


async def test_a_recording_that_ends_while_the_agent_works_has_no_outcome() -> None:
    log = Log()
    started(log)
    log.state("running")
    log.call()
    assert (await read_recording(log.events)).outcome is None


async def test_sessions_that_cannot_be_replayed_say_why() -> None:
    log = Log()
    log.add("message", "user", content="hi")
    with pytest.raises(RecordingError, match=r"no session\.created"):
        (await read_recording(log.events))
    replayed = Log()
    replayed.add("session.created", "system", replay_of=str(uuid.uuid4()))
    with pytest.raises(RecordingError, match="itself a replay"):
        await read_recording(replayed.events)
    platform = Log()
    platform.add("session.created", "system", config={PLATFORM_LOG_MARK: True})
    platform.add("audit.login", "system", actor="alice", via="api", address="127.0.0.1")
    with pytest.raises(RecordingError, match="platform's audit log"):
        await read_recording(platform.events)


async def test_a_recording_the_agent_would_never_start_on_is_refused() -> None:
    """The agent starts on the user's message: a replay of a recording without one before
    its first model call (an imported one can be so) would wait for ever."""
    agent_first = Log()
    agent_first.add("session.created", "system", config={"model": "m", "imported": {}})
    agent_first.call()
    agent_first.add("message", "user", content="later")
    with pytest.raises(RecordingError, match=r"first model call \(seq 2\) comes before any "):
        await read_recording(agent_first.events)
    silent = Log()
    silent.add("session.created", "system", config={"model": "m"})
    silent.state("stopped", "the recording ends here")
    with pytest.raises(RecordingError, match="holds no message from the user"):
        await read_recording(silent.events)
    steered = Log()
    started(steered)
    steered.state("running")
    steered.call()
    steered.add("message", "user", content="also do this")
    with pytest.raises(RecordingError, match="while the agent was working"):
        await read_recording(steered.events)


def test_divergences_are_frozen_and_round_trip_as_json() -> None:
    adapter: TypeAdapter[Divergence] = TypeAdapter(Divergence)
    for divergence in (
        ExtraCall(step=3, summary="model call 3: more"),
        OutcomeDivergence(
            step=2,
            recorded_state="finished",
            recorded_reason="",
            new_state="error",
            new_reason="stuck",
            summary="ended error",
        ),
    ):
        assert adapter.validate_json(adapter.dump_json(divergence)) == divergence
        with pytest.raises(ValidationError):
            divergence.step = 9  # type: ignore[misc]


async def test_a_prompt_recorded_as_what_it_adds_resolves_to_the_whole_prompt() -> None:
    # A call lists the messages it adds to what it keeps of the previous call's prompt
    # (prompt_kept); one recorded before that (no prompt_kept) lists its whole prompt. The
    # chain goes through an interrupted call, which the replay does not serve.
    log = Log()
    log.add("session.created", "user", title="t", config={"agent": "codeact"})
    log.add("message", "user", content="go")
    old = log.call(prompt=["s", "u"])
    grown = log.call(prompt=["a1", "t1"], prompt_kept=2)
    cut = log.call(prompt=["x"], prompt_kept=3, error="stopped", error_kind="interrupted")
    last = log.call(prompt=["a2"], prompt_kept=4)
    again = log.call(prompt=["s", "n"])  # a new run lists its whole prompt again
    recording = await read_recording(log.events)
    assert list(recording.call_seqs) == [old, grown, last, again]
    assert await recording.prompt_of(old) == ["s", "u"]
    assert await recording.prompt_of(grown) == ["s", "u", "a1", "t1"]
    assert await recording.prompt_of(cut) == ["s", "u", "a1", "x"]
    assert await recording.prompt_of(last) == ["s", "u", "a1", "x", "a2"]
    assert await recording.prompt_of(again) == ["s", "n"]


async def test_a_prompt_that_keeps_what_is_not_there_is_refused() -> None:
    log = Log()
    log.add("session.created", "user", title="t", config={"agent": "codeact"})
    log.add("message", "user", content="t")
    first = log.call(prompt=["a"], prompt_kept=1)
    with pytest.raises(PromptChainError, match="keeps 1 messages of the previous call's prompt"):
        await (await read_recording(log.events)).prompt_of(first)


async def test_the_window_keeps_only_what_the_replay_still_needs() -> None:
    # The memory a replay keeps of its recording must not grow with the recording: events
    # before the call served last are forgotten, and those ahead are read a page at a time.
    log = Log()
    started(log)
    calls = []
    for step in range(50):
        call = log.call()
        run = log.add("run", "agent", call, command=f"echo {step}")
        log.add("run.output", "environment", run, output=str(step), exit_code=0)
        calls.append(call)
    log.state("finished")
    recording = await read_recording(log.events)
    window = recording.window
    assert len(window) == 0  # the index read the log; the window reads as asked
    largest = 0
    for index, call in enumerate(calls):
        recording.serving(index)
        assert (await recording.call(index)).seq == call
        [action] = await recording.consequences(call)
        answer = await recording.answer(action.seq)
        assert answer is not None and answer.payload["output"] == str(index)
        largest = max(largest, len(window))
    assert largest <= 3 + 3 + 2  # the call before, this one with its action and answer, a page
    with pytest.raises(LookupError, match="forgotten"):
        await recording.call(0)
