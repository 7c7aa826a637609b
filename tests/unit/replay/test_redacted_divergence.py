"""The ``redacted`` divergence in words, and what a recording's redactions make a model call
miss: its own redacted parts, and the prompt messages it keeps from an earlier call that were
redacted there (where only that call has a record)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter

from app.events.commitment import marker
from app.replay import ReplayResult
from app.replay.divergence import Divergence, RedactedPart, describe_parts, redacted
from app.replay.redactions import RedactedParts
from app.replay.report import describe
from app.store import RecordedEvent

SALT = b"0123456789abcdef"


def event(seq: int, kind: str, **payload: Any) -> RecordedEvent:
    """An event as read with its stored form: markers where parts went."""
    return RecordedEvent(
        global_position=seq, session_id=uuid.uuid4(), seq=seq, event_id=uuid.uuid4(), tx=1,
        kind=kind, source="agent", cause=None, payload=payload, schema_version=1,
        created_at=datetime.now(UTC), hash=b"",
    )  # fmt: skip


def gone(value: Any) -> dict[str, str]:
    return marker(value, SALT)


def record(seq: int, target: int, path: str, reason: str = "why") -> RecordedEvent:
    return event(seq, "redaction", target_seq=target, path=path, reason=reason)


def test_the_summary_says_the_step_what_cannot_be_done_and_each_part_with_its_reason() -> None:
    one = redacted(3, 17, [RedactedPart(seq=17, path="/response", reason="a leaked key")],
                   "model call 3 cannot be served")  # fmt: skip
    assert one.kind == "redacted" and (one.step, one.recorded_seq) == (3, 17)
    assert (
        one.summary == "model call 3 cannot be served: seq 17 /response was redacted (a leaked key)"
    )
    assert describe_parts([RedactedPart(seq=4, path="")]) == "seq 4 (the whole event) was redacted"
    two = [RedactedPart(seq=4, path="/prompt/1", reason="a"), RedactedPart(seq=2, path="/prompt/0")]
    assert describe_parts(two) == "seq 4 /prompt/1 (a) and seq 2 /prompt/0 were redacted"
    many = [RedactedPart(seq=seq, path="/output") for seq in range(1, 6)]
    assert describe_parts(many) == (
        "seq 1 /output, seq 2 /output, seq 3 /output and 2 more parts were redacted"
    )
    # It is one of the divergences a replay.result holds, and reads back as one.
    stored = one.model_dump(mode="json")
    assert TypeAdapter(Divergence).validate_python(stored) == one


def test_chronicle_replay_prints_each_part_and_its_reason() -> None:
    divergence = redacted(2, 9, [RedactedPart(seq=9, path="/output", reason="a password"),
                                 RedactedPart(seq=9, path="/exit_code")],
                          "model call 2: the answer to its run cannot be served")  # fmt: skip
    text = describe(ReplayResult(
        session_id=uuid.uuid4(), replay_of=uuid.uuid4(), mode="strict", matched=False,
        outcome="error", recorded_outcome="finished", steps_recorded=3, steps_served=2,
        steps_matched=1, divergence=divergence, differences=[], model_calls=0, seconds=0.1,
    ))  # fmt: skip
    lines = text.splitlines()
    assert lines[1] == f"diverged (redacted): {divergence.summary}"
    assert lines[2:] == [
        "  redacted: seq 9 /output: a password",
        "  redacted: seq 9 /exit_code: no redaction record says why",
        "  a replay cannot go past seq 9; a fork before it can go on live (--on-divergence fork)",
    ]


def test_a_prompt_message_redacted_from_one_call_is_missing_from_the_calls_that_keep_it() -> None:
    parts = RedactedParts()
    for recorded in [
        event(1, "session.created", title="t"),
        # An interrupted call listed its whole prompt; its third message went.
        event(2, "llm.call", prompt=["a" * 64, "b" * 64, gone("c" * 64)]),
        # The next keeps the first three of them and adds one: it misses the third.
        event(3, "llm.call", prompt=["d" * 64], prompt_kept=3),
        # One that keeps only two does not.
        event(4, "llm.call", prompt=["e" * 64], prompt_kept=2),
        # A whole prompt list redacted: a call that keeps any of it misses what went.
        event(5, "llm.call", prompt=gone(["f" * 64]), prompt_kept=0),
        event(6, "llm.call", prompt=[], prompt_kept=1),
        # A call that keeps none of it, or lists its whole prompt, starts afresh.
        event(7, "llm.call", prompt=["g" * 64], prompt_kept=0),
        record(8, 2, "/prompt/2", reason="a key"),
        record(9, 5, "/prompt"),
        record(10, 1, "/title"),
        record(11, 7, "/response/content"),
    ]:
        parts.add(recorded)

    assert parts.of_call(2) == [RedactedPart(seq=2, path="/prompt/2", reason="a key")]
    assert parts.of_call(3) == [RedactedPart(seq=2, path="/prompt/2", reason="a key")]
    assert parts.of_call(4) == []
    assert parts.of_call(6) == [RedactedPart(seq=5, path="/prompt", reason="why")]
    assert parts.of_call(7) == [RedactedPart(seq=7, path="/response/content", reason="why")]
    # The title blocks nothing, but a copy knows it went.
    assert parts.of(1) == [] and parts.at(1, "/title") and not parts.at(1, "/config")
    assert parts.among([1, 3, 7, 2]) == (7, parts.of(7))
    assert parts.among([1, 3, 4]) is None
