"""Which redactions stop a replay, and where (docs/replay.md, "Redacted sessions"), on one
recording written as the controller writes it and redacted a part at a time, each time
earlier in the session, so each replay stops earlier than the one before. Forks of it are
refused where their copy would hold a redacted part. Real PostgreSQL; nothing runs."""

from __future__ import annotations

import json

import pytest

from app.replay import RedactedDivergence, RedactedPart, ReplayError, ReplayResult, replay
from app.replay.fork import ForkError, fork_point, prefix_of
from app.store import EventStore
from tests.support.written_sessions import Recorder


async def _replayed(store: EventStore, recorder: Recorder) -> tuple[ReplayResult, list]:
    result = await replay(store, recorder.session)
    return result, await store.read(result.session_id)


def _redacted(result: ReplayResult) -> RedactedDivergence:
    assert isinstance(result.divergence, RedactedDivergence), result.divergence
    return result.divergence


async def test_each_redacted_part_stops_the_replay_where_it_is_needed(store: EventStore) -> None:
    recorder = Recorder(store)
    await recorder.start("Fix the tests; the key is sk-live-0123456789.")
    await recorder.state("running")
    [run_1] = await recorder.call(("execute_bash", {"command": "pytest -q"}))
    await recorder.output(run_1, "1 failed", exit_code=1)
    [run_2] = await recorder.call(("execute_bash", {"command": "pytest -q -x"}))
    await recorder.output(run_2, "1 passed")
    [finish] = await recorder.call(("finish", {"message": "fixed"}))
    await recorder.state("finished", "the agent called finish")
    session = recorder.session
    events = await store.read(session)
    calls = [e.seq for e in events if e.kind == "llm.call"]
    message, output_2, end = 2, run_2 + 1, events[-1].seq

    # The title and who sent an event block nothing: the agent reads neither.
    await store.redact(session, 1, "/title", reason="the task names a customer", user="ops")
    result, replayed = await _replayed(store, recorder)
    assert result.matched, result.divergence
    assert replayed[0].payload["title"] == f"replay of {session}"
    copied = prefix_of(await store.read(session), calls[0])
    assert copied[0].payload["title"] == ""  # not copied as if it were a title

    # The recorded end: the replay ended finished, the recording says nothing it can compare.
    await store.redact(session, end, "/state", reason="test", user="ops")
    divergence = _redacted((await _replayed(store, recorder))[0])
    assert (divergence.step, divergence.recorded_seq) == (3, end)
    assert divergence.summary == (
        f"after model call 3, how the run ended cannot be compared: seq {end} /state was "
        "redacted (test)"
    )

    # What a reply led to: the agent's finish cannot be compared with the recorded one.
    await store.redact(session, finish, "/message", reason="test", user="ops")
    result, _ = await _replayed(store, recorder)
    divergence = _redacted(result)
    assert (divergence.step, divergence.recorded_seq, result.steps_served) == (3, finish, 3)
    assert divergence.summary.startswith("model call 3: what it led to cannot be compared")

    # An observation: the run is not answered with a placeholder; the replay stops there.
    await store.redact(session, output_2, "/output", reason="it printed the key", user="ops")
    result, replayed = await _replayed(store, recorder)
    divergence = _redacted(result)
    assert (divergence.step, divergence.recorded_seq) == (2, output_2)
    assert divergence.parts == [
        RedactedPart(seq=output_2, path="/output", reason="it printed the key")
    ]
    assert divergence.summary == (
        f"model call 2: the answer to its run cannot be served: seq {output_2} /output was "
        "redacted (it printed the key)"
    )
    assert (result.steps_served, result.steps_matched, result.outcome) == (2, 1, "error")
    run = [e for e in replayed if e.kind == "run"][-1]
    answer = next(e for e in replayed if e.cause == run.seq)
    assert answer.kind == "error" and "the replay diverged" in answer.payload["message"]
    assert "[redacted]" not in json.dumps([e.payload for e in replayed])
    # --on-divergence fork cuts before the run whose answer went; a copy past it is refused.
    events = await store.read(session)
    assert fork_point(events, divergence) == run_2 - 1
    with pytest.raises(ForkError, match=f"fork before seq {output_2}"):
        prefix_of(events, output_2)

    # A prompt message: every call that names it loses it, and the first call cannot be
    # checked (nor would a replay that matched it store the erased message again).
    first = events[calls[0] - 1]
    user_entry = first.payload["prompt"][1]
    records = await store.redact(session, calls[0], "/prompt/1", reason="the key", user="ops")
    # (the replays above sent it too: their calls lose it as well)
    assert [r.payload["target_seq"] for r in records if r.session_id == session] == [calls[0]]
    assert await store.read_messages([user_entry]) == {}
    result, replayed = await _replayed(store, recorder)
    divergence = _redacted(result)
    assert (divergence.step, divergence.recorded_seq, result.steps_served) == (1, calls[0], 0)
    assert divergence.parts == [RedactedPart(seq=calls[0], path="/prompt/1", reason="the key")]
    assert not [e for e in replayed if e.kind == "llm.call"]

    # The user's message: nothing is fed from a placeholder.
    await store.redact(session, message, "/content", reason="the key", user="ops")
    result, replayed = await _replayed(store, recorder)
    divergence = _redacted(result)
    assert (divergence.step, divergence.recorded_seq, result.steps_served) == (1, message, 0)
    assert divergence.summary == (
        f"model call 1 cannot be served: seq {message} /content was redacted (the key)"
    )
    assert [e.kind for e in replayed] == ["session.created", "agent.state", "replay.result"]
    with pytest.raises(ForkError, match="there is nothing before it to fork"):
        prefix_of(await store.read(session), calls[0])

    # The configuration: refused before anything is written.
    await store.redact(session, 1, "/config/workspace", reason="a home path", user="ops")
    with pytest.raises(ReplayError, match="how its agent was configured was redacted") as refused:
        await replay(store, session)
    assert "seq 1 /config/workspace was redacted (a home path)" in str(refused.value)
