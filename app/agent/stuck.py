"""Stuck detection: loops an agent falls into, read from the log."""

from __future__ import annotations

from pydantic import BaseModel

from app.events import AWAITED_KINDS
from app.events.canonical import canonical_json
from app.store import RecordedEvent

#: Not part of what an action or a result is (``replayed_from`` marks an event a replay served
#: from its recording: a replay must find the agent stuck where the recording did).
VOLATILE = ("thought", "tool_call_id", "replayed_from")


class StuckConfig(BaseModel):
    enabled: bool = True
    repeated_pairs: int = 4  # the same action with the same result
    repeated_errors: int = 3  # the same error again and again
    monologue: int = 3  # agent messages with nothing in between
    alternation: int = 6  # A, B, A, B, ... actions with their results


def _key(event: RecordedEvent) -> str:
    payload = {k: v for k, v in event.payload.items() if k not in VOLATILE}
    return event.kind + canonical_json(payload)


def detect(events: list[RecordedEvent], config: StuckConfig) -> str | None:
    """Why the agent looks stuck, or None."""
    if not config.enabled:
        return None
    answers = {e.cause: e for e in events if e.source == "environment" and e.cause}
    pairs = [
        (_key(e), _key(answers[e.seq]))
        for e in events
        if e.kind in AWAITED_KINDS and e.seq in answers
    ]
    n = config.repeated_pairs
    if len(pairs) >= n and len(set(pairs[-n:])) == 1:
        return f"it repeated the same action with the same result {n} times"
    errors = [e for e in events if e.kind == "error" and e.source == "environment"]
    recent = [e for e in events[-4 * config.repeated_errors :] if e.source == "environment"]
    n = config.repeated_errors
    if (
        len(recent) >= n
        and all(e.kind == "error" for e in recent[-n:])
        and len({e.payload.get("message") for e in recent[-n:]}) == 1
        and len(errors) >= n
    ):
        return f"the same error came back {n} times: {recent[-1].payload.get('message')}"
    n = config.monologue
    talk = [e for e in events if (e.kind == "message") or e.source == "environment"]
    tail = talk[-n:]
    if len(tail) == n and all(e.kind == "message" and e.source == "agent" for e in tail):
        return f"it sent {n} messages in a row without any result or answer"
    n = config.alternation
    if len(pairs) >= n:
        window = pairs[-n:]
        evens, odds = set(window[0::2]), set(window[1::2])
        if len(evens) == 1 and len(odds) == 1 and evens != odds:
            return f"it alternated between two actions with the same results {n // 2} times"
    return None
