"""A served observation appended as the recording stores it is, byte for byte, what rebuilding
it as an event writes (``app/replay/served.py`` against ``rebuilt_observation`` and the
store's ``encode_batch``), and every payload it cannot vouch for is left to the rebuilding.

Each case is an observation as a live session records it (its payload read back as a
reader gets it), served as the answer to an action at seq 7; what is compared is what the
log would store: kind, source, cause, schema version, the canonical text (hashed) and the
payload a reader of the replay's log gets (with its key order).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from app.events import (
    ErrorObservation,
    Event,
    FileEditOutput,
    FileReadOutput,
    FileWriteOutput,
    McpResult,
    RunOutput,
)
from app.events.canonical import encode
from app.events.imported import ImportedOutput
from app.events.masking import SecretMasker
from app.events.origin import ImportOrigin
from app.events.stored_form import RestoredObject
from app.replay.answers import rebuilt_observation
from app.replay.served import served_observation
from app.store import RecordedEvent
from app.store.append import EncodedBatch, encode_batch
from tests.support.event_log import as_recorded

MAX_EVENT_BYTES = 1_000_000
BLOB_THRESHOLD = 64 * 1024
ACTION_SEQ = 7

RECORDED = [
    RunOutput(output="1\n", exit_code=0, cause=3),
    RunOutput(output="caf\u00e9 \u2028 \x7f\n", exit_code=None, still_running=True, cause=3),
    RunOutput(output="x", exit_code=1, timed_out=True, truncated=True, cause=3, user="ana"),
    FileReadOutput(path="a.py", content="print('hi')\n", cause=3),
    FileWriteOutput(path="b.txt", diff="+b\n", cause=3),
    FileEditOutput(path="c.py", diff="-a\n+b\n", content="b\n", cause=3),
    McpResult(
        content=[{"type": "text", "text": "ok"}, {"type": "image", "mimeType": "x", "data": "AA"}],
        structured_content={"zeta": 1.0, "alpha": [2.5, {"y": None, "b": True}], "é": "ü"},
        is_error=False,
        cause=3,
    ),
    ErrorObservation(message="boom", error_type="internal", tool_call_id="c1", cause=3),
    ImportedOutput(observation="browse", content="page", extras={"url": "u", "n": 3}, cause=3),
    RunOutput(
        output="imported",
        exit_code=0,
        cause=3,
        imported=ImportOrigin(format="openhands", file="t.jsonl", index=4),
    ),
    RunOutput(output="served before", exit_code=0, cause=3, replayed_from=11),
]


def recorded(event: Event, seq: int = 8, payload: Any = None) -> RecordedEvent:
    """``event`` as a reader of the recording gets it: its payload encoded as the store
    encodes it and read back (jsonb's key order: length, then bytes)."""
    if payload is None:
        stored = json.loads(encode(event.payload()).text)
        payload = dict(sorted(stored.items(), key=lambda item: (len(item[0]), item[0])))
    return as_recorded(event, uuid.uuid4(), seq, payload)


def served(
    answer: RecordedEvent,
    masker: SecretMasker | None = None,
    blob_threshold: int | None = BLOB_THRESHOLD,
) -> EncodedBatch | None:
    return served_observation(
        answer,
        ACTION_SEQ,
        masker=masker,
        max_event_bytes=MAX_EVENT_BYTES,
        blob_threshold=blob_threshold,
    )


def rebuilt(
    answer: RecordedEvent,
    masker: SecretMasker | None = None,
    blob_threshold: int | None = BLOB_THRESHOLD,
) -> EncodedBatch:
    """What the replay appended before: the event rebuilt, then encoded by the store."""
    observation = rebuilt_observation(answer).model_copy(update={"cause": ACTION_SEQ})
    return encode_batch([observation], MAX_EVENT_BYTES, masker, blob_threshold=blob_threshold)


def stored(batch: EncodedBatch) -> tuple[Any, ...]:
    """What the log holds of a batch's one event, and what a reader of the replay gets
    (its payload, in its key order), all but the fresh event id."""
    return (
        batch.kinds,
        batch.sources,
        batch.causes,
        batch.versions,
        batch.payload_texts,
        json.dumps(batch.payloads, ensure_ascii=True),
        batch.blobs,
    )


@pytest.mark.parametrize("event", RECORDED, ids=lambda event: event.kind)
def test_a_served_observation_is_stored_as_the_rebuilt_one(event: Event) -> None:
    answer = recorded(event)
    batch = served(answer)
    assert batch is not None
    assert stored(batch) == stored(rebuilt(answer))
    assert json.loads(batch.payload_texts[0])["replayed_from"] == answer.seq
    assert batch.event_ids[0] != answer.event_id


def test_the_masking_check_is_kept() -> None:
    """A secret known now but not when the recording was made: the payload is masked (by
    the rebuilding way), not served as it was recorded."""
    masker = SecretMasker({"sk-live-0123456789": "OPENAI_API_KEY"})
    answer = recorded(RunOutput(output="key sk-live-0123456789\n", exit_code=0, cause=3))
    assert served(answer, masker) is None
    assert "[secret OPENAI_API_KEY]" in rebuilt(answer, masker).payload_texts[0]
    clean = recorded(RunOutput(output="no key here\n", exit_code=0, cause=3))
    batch = served(clean, masker)
    assert batch is not None and stored(batch) == stored(rebuilt(clean, masker))


def test_a_string_over_the_blob_threshold_is_left_to_the_store() -> None:
    answer = recorded(RunOutput(output="x" * 200, exit_code=0, cause=3))
    assert served(answer, blob_threshold=100) is None
    assert rebuilt(answer, blob_threshold=100).blobs  # the store moves it to a blob


def test_a_recording_of_older_code_is_rebuilt() -> None:
    """Payloads the rebuilt event would write otherwise: a field missing (the event fills in
    its default), a key it does not have, another schema version, a kind that is not an
    observation, a payload stored with escapes. (A ``user`` of None is left out either way.)"""
    run = RunOutput(output="1\n", exit_code=0, cause=3)
    payload = json.loads(encode(run.payload()).text)
    missing = {key: value for key, value in payload.items() if key != "still_running"}
    assert served(recorded(run, payload=missing)) is None
    assert stored(rebuilt(recorded(run, payload=missing)))[4] == stored(rebuilt(recorded(run)))[4]
    assert served(recorded(run, payload={**payload, "extra": 1})) is None
    with_no_user = recorded(run, payload={**payload, "user": None})  # dumped without it
    batch = served(with_no_user)
    assert batch is not None and stored(batch) == stored(rebuilt(with_no_user))
    assert served(recorded(run)._replace(schema_version=0)) is None
    assert served(recorded(run)._replace(kind="run")) is None
    escaped = RestoredObject.of({**payload, "output": "a\x00b"}, {"$obj": []})
    assert served(recorded(run, payload=escaped)) is None
