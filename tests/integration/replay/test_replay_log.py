"""The replay's own log is kept in memory while the replay runs and written in batches
(``BufferedSession``): what reaches PostgreSQL must be exactly what the controller and the
action workers were handed, complete, in order, and verifiable. Real PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from app.agent.controller import STUCK_WINDOW, TRIM_EVERY, AgentController
from app.events import AgentState, Message, SessionCreated
from app.replay import replay
from app.store import BufferedSession, EventStore, RecordedEvent
from tests.support.written_sessions import Recorder


async def test_what_was_handed_out_is_what_is_written_and_it_verifies(store: EventStore) -> None:
    # Two writers append side by side and batches are written every 3 events, so writes
    # happen while appends go on (before the flush took a lock, two flushes wrote the same
    # batch twice and the second was refused: "expected 4002").
    session = uuid.uuid4()
    log = BufferedSession(store, session, flush_every=3)
    handed = await log.append(session, [SessionCreated(title="t", config={})], expected_seq=0)
    await log.flush()
    assert [e.seq for e in await store.read(session)] == [1]

    async def writer(name: str) -> None:
        for n in range(20):
            handed.extend(await log.append(session, [Message(content=f"{name} {n}")]))
            await asyncio.sleep(0)

    await asyncio.gather(writer("a"), writer("b"))
    handed += await log.append(session, [AgentState(state="finished", reason="done")])
    assert [e.seq for e in await log.read(session, after_seq=40)] == [41, 42]
    await log.flush()
    stored = await store.read(session)
    assert [(e.seq, e.event_id, e.kind, e.payload) for e in stored] == sorted(
        (e.seq, e.event_id, e.kind, e.payload) for e in handed
    )
    assert len(stored) == 42
    assert (await store.verify(session)).ok


async def test_a_replay_is_in_the_store_when_it_returns(store: EventStore) -> None:
    recorder = Recorder(store)
    await recorder.start()
    await recorder.state("running")
    for n in range(3):
        [run] = await recorder.call(("execute_bash", {"command": f"echo {n}"}))
        await recorder.output(run, f"{n}\n")
    await recorder.call(("finish", {"message": "done"}))
    await recorder.state("finished", "the agent called finish")
    result = await replay(store, recorder.session)
    assert result.matched, result.divergence
    events = await store.read(result.session_id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].kind == "replay.result"
    served = [e for e in events if e.kind == "llm.call"]
    assert len(served) == 4 and all(e.payload.get("replayed_from") for e in served)
    assert sum(e.kind == "run.output" for e in events) == 3
    report = await store.verify(result.session_id)
    assert report.ok and report.messages > 0, report.reason


async def test_written_events_leave_memory_and_are_read_from_the_store(store: EventStore) -> None:
    # Before, the buffer kept every event of the session for reads, so a long replay's
    # memory grew with its log (it held all 100 here); now it keeps the unwritten events and
    # the last ``keep_written``, and a read from further back is answered by the store.
    session = uuid.uuid4()
    log = BufferedSession(store, session, flush_every=10, keep_written=5)
    handed = await log.append(session, [SessionCreated(title="t", config={})], expected_seq=0)
    for n in range(99):
        handed += await log.append(session, [Message(content=f"m {n}")])
        assert log.held() <= 10 + 5
    assert await log.last_seq(session) == 100
    whole = [(e.seq, e.event_id, e.payload) for e in handed]
    assert [(e.seq, e.event_id, e.payload) for e in await log.read(session)] == whole
    assert [e.seq for e in await log.read(session, after_seq=3, limit=10)] == list(range(4, 14))
    assert [e.seq for e in await log.read(session, after_seq=85, limit=20)] == list(range(86, 101))
    assert [e.seq for e in await log.read(session, after_seq=98)] == [99, 100]
    as_stored = await log.read(session, after_seq=50, resolve_blobs=False)
    assert [e.seq for e in as_stored] == list(range(51, 101))
    await log.close()
    assert [(e.seq, e.event_id, e.payload) for e in await store.read(session)] == whole
    assert (await store.verify(session)).ok


async def test_the_controller_keeps_a_window_of_the_log_not_the_log(
    store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, the controller kept every event of the session (it gave them all to the agent
    # at each step, and condensation looked back over them): 600 events here. Now it keeps
    # what stuck detection looks at and what the agent was not given yet; the replay of the
    # long session still matches step for step.
    recorder = Recorder(store, max_iterations=300, stuck_detection=False)
    await recorder.start()
    await recorder.state("running")
    steps = 200
    for n in range(steps):
        [run] = await recorder.call(("execute_bash", {"command": f"echo {n}"}))
        await recorder.output(run, f"{n}\n")
    await recorder.call(("finish", {"message": "done"}))
    await recorder.state("finished", "the agent called finish")
    held: list[int] = []
    remember = AgentController._remember

    def spy(controller: AgentController, fresh: list[RecordedEvent]) -> None:
        remember(controller, fresh)
        held.append(len(controller.events))

    monkeypatch.setattr(AgentController, "_remember", spy)
    result = await replay(store, recorder.session)
    assert result.matched and result.steps_matched == steps + 1, result.divergence
    written = await store.read(result.session_id)
    assert len(written) > 3 * steps
    assert max(held) <= STUCK_WINDOW + TRIM_EVERY + 4
