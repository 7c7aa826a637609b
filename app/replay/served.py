"""A recorded observation served again as the recording stores it, without being rebuilt.

A replay answers each action with the recorded observation, marked ``replayed_from``. Built
as any event is, that is a validation of the recorded payload, two copies of the event, a
dump of its fields and their encoding, for a payload the recording already holds in exactly
that form: the recording is our own log, and every payload in it is what ``Event.payload``
dumped from a validated event of the same class. So the served observation's payload is the
recorded one with ``replayed_from`` set, encoded (the canonical text must be made anyway: it
is what is stored and hashed), and checked by the store's own rules that concern its
content: the masking check (a secret known now but not when it was recorded is masked, on
the slow path), the blob threshold and the size limit.

It is taken only where the payload is sure to be what the event rebuilt from it would dump,
byte for byte: the same schema version (no upcast), the class's own ``payload`` (no kind
that writes its payload another way), a payload that is its own stored form (no escapes or
blobs to restore and write again), and exactly the class's fields (a recording written before
a field was added would have it filled in by the rebuilt event). Anything else goes the
rebuilding way (``RecordedAnswers.handle``). tests/unit/replay/test_served_observation.py
compares the two over every observation kind.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from app.events import EVENT_TYPES, Event, Observation, new_event_id
from app.events.base import ENVELOPE_FIELDS
from app.events.canonical import CanonicalJsonError, encode
from app.events.masking import SecretMasker
from app.store import EncodedBatch, RecordedEvent, too_large

#: Payload keys of a recorded event a served copy leaves out (``Event.payload`` writes
#: ``imported`` only where ``replayed_from`` is None) or sets itself.
_NOT_COPIED = frozenset({"imported", "replayed_from", "user"})


@cache
def _payload_fields(cls: type[Event]) -> tuple[str, ...]:
    """The keys ``cls``'s ``payload`` writes, in the order it writes them (its fields')."""
    return tuple(name for name in cls.model_fields if name not in ENVELOPE_FIELDS | {"imported"})


def served_observation(
    answer: RecordedEvent,
    cause: int,
    *,
    masker: SecretMasker | None,
    max_event_bytes: int,
    blob_threshold: int | None,
) -> EncodedBatch | None:
    """The recorded ``answer`` as the answer to the replay's action at ``cause``, encoded for
    ``BufferedSession``; None when it must be rebuilt as an event instead (see the module)."""
    cls = EVENT_TYPES.get(answer.kind)
    payload = answer.payload
    if (
        cls is None
        or not issubclass(cls, Observation)
        or cls.payload is not Event.payload
        or answer.schema_version != cls.schema_version
        or type(payload) is not dict  # a RestoredObject: stored with escapes or blobs
    ):
        return None
    # In the order the rebuilt event's dump has them: a reader of the replay's log gets the
    # payload as it would have.
    served: dict[str, Any] = {}
    copied = 0
    for name in _payload_fields(cls):
        if name == "replayed_from":
            served[name] = answer.seq
        elif name == "user":
            if payload.get(name) is not None:
                served[name] = payload[name]
        elif name in payload:
            served[name] = payload[name]
            copied += 1
        else:
            return None  # a field the recording does not have: the rebuilt event fills it in
    if copied != len(payload.keys() - _NOT_COPIED):
        return None  # a key the event does not have
    try:
        encoded = encode(served, blob_threshold=blob_threshold)
    except CanonicalJsonError:
        return None
    text = encoded.text
    if (
        encoded.marked
        or (masker and masker.leaks_into_json(text))
        or too_large(text, max_event_bytes)
    ):
        return None
    return EncodedBatch(
        event_ids=[new_event_id()],
        kinds=[answer.kind],
        sources=[answer.source],
        causes=[cause],
        payload_texts=[text],
        versions=[cls.schema_version],
        payloads=[encoded.value],
        blobs={},
    )
