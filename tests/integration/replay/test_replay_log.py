"""The replay's own log is kept in memory while the replay runs and written in batches
(``BufferedSession``): what reaches PostgreSQL must be exactly what the controller and the
action workers were handed, complete, in order, and verifiable. Real PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid

from app.events import AgentState, Message, SessionCreated
from app.replay import replay
from app.store import EventStore
from app.store.buffered_session import BufferedSession
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
