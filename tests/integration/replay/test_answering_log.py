"""The replay's log answers a replayed action in the append that records it: the answer is in
the log when the append returns (before: an action worker, a task of its own, answered it
after being woken by the session's subscription, so it was not there yet), and an action it
cannot answer is answered with an error and stops the run (``WorkerStopped``), as a live
worker's stop does. Real PostgreSQL."""

from __future__ import annotations

import uuid

import pytest

from app.events import Event, new_event_id
from app.replay.answers import RecordedAnswers
from app.replay.log import AnsweringLog
from app.replay.progress import ReplayProgress
from app.replay.recording import store_pages, stream_recording
from app.store import EventStore, RecordedEvent, WorkerStopped
from tests.support.written_sessions import Recorder


def _again(event: RecordedEvent, **update: object) -> Event:
    return event.event().model_copy(update={"event_id": new_event_id(), **update})


async def _replay_log(store: EventStore) -> tuple[AnsweringLog, ReplayProgress, RecordedEvent]:
    """A replay's log of a recorded one-command session, with its first event and its
    answers set up; the recorded call."""
    recorder = Recorder(store)
    await recorder.start()
    [run] = await recorder.call(("execute_bash", {"command": "pytest -q"}))
    await recorder.output(run, "1 passed")
    await recorder.call(("finish", {"message": "done"}))
    await recorder.state("finished", "the agent called finish")
    recording = await stream_recording(store_pages(store, recorder.session))
    replay_id = uuid.uuid4()
    log = AnsweringLog(store, replay_id)
    progress = ReplayProgress(log, replay_id, recording, "strict")
    log.answer_with([RecordedAnswers("sandbox", progress)])
    [created] = await store.read(recorder.session, limit=1)
    await log.append(replay_id, [_again(created)], expected_seq=0)
    return log, progress, await recording.call(0)


async def test_an_action_is_answered_before_its_append_returns(store: EventStore) -> None:
    log, progress, call = await _replay_log(store)
    try:
        [action] = await progress.recording.consequences(call.seq)
        answer = await progress.recording.answer(action.seq)
        assert answer is not None
        appended = await log.append(
            log.session_id,
            [_again(call, replayed_from=call.seq), _again(action, cause=2)],
        )
        assert [e.kind for e in appended] == ["llm.call", "run"]  # what it was given
        last = (await log.read(log.session_id))[-1]
        assert (last.kind, last.cause) == ("run.output", appended[1].seq)
        assert last.payload["replayed_from"] == answer.seq
        assert last.payload["output"] == "1 passed"
    finally:
        await log.close()


async def test_an_action_unlike_the_recorded_one_is_answered_with_an_error_and_stops(
    store: EventStore,
) -> None:
    log, progress, call = await _replay_log(store)
    try:
        [action] = await progress.recording.consequences(call.seq)
        other = action.event().model_copy(
            update={"event_id": new_event_id(), "cause": 2, "command": "pytest -q -x"}
        )
        with pytest.raises(WorkerStopped, match="the replay diverged"):
            await log.append(log.session_id, [_again(call, replayed_from=call.seq), other])
        last = (await log.read(log.session_id))[-1]
        assert (last.kind, last.cause) == ("error", 3)
        assert last.payload["error_type"] == "unavailable"
        assert progress.divergence is not None and progress.divergence.kind == "action"
    finally:
        await log.close()
