"""The canonical form of an action, to tell whether a replayed agent did what was recorded.

An action is compared by its kind and the fields of its payload, as its event class reads
them (so a field left at its default and one written out compare equal). Left out, because
they differ between any two runs without the agent acting differently:

- ``event_id`` — a fresh idempotency key per append;
- ``cause`` — the seq of the model call, which moves when the replay session holds other
  events (no sandbox start in a replay, for one);
- ``tool_call_id`` — minted by the model server (served from the recording, but an agent may
  renumber them); the tool call is matched by its position instead;
- ``replayed_from`` — the marker of events served from a recording;
- ``user`` — who sent an event through the access service (a user's events, never an
  action the agent made);
- the row's own columns (``seq``, ``created_at``, ``hash``, ``global_position``, ``tx``,
  ``session_id``), which are not part of a payload at all.

Everything else counts, ``thought`` included: it is the model's text that came with the call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from app.events import EVENT_TYPES, canonical_json
from app.replay.divergence import ActionDivergence, FieldChange

#: Payload and envelope fields that never count in a comparison (see the module).
VOLATILE_FIELDS = frozenset({"event_id", "cause", "tool_call_id", "replayed_from", "user"})


def canonical_action(kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """``{"kind": kind, **fields}`` without the volatile fields, defaults filled in by the
    kind's event class (a payload that class refuses is compared as it is)."""
    fields = dict(payload)
    cls = EVENT_TYPES.get(kind)
    if cls is not None:
        try:
            fields = cls.model_validate(
                {k: v for k, v in payload.items() if k not in VOLATILE_FIELDS} | {"kind": kind}
            ).model_dump(mode="json")
        except ValidationError:
            pass
    return {"kind": kind} | {
        key: value
        for key, value in sorted(fields.items())
        if key not in VOLATILE_FIELDS and key not in ("kind", "source")
    }


def field_changes(recorded: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldChange]:
    """The fields (of two canonical forms) whose values differ, in name order; a field one
    side lacks shows as None there."""
    return [
        FieldChange(field=name, recorded=recorded.get(name), new=new.get(name))
        for name in sorted(set(recorded) | set(new))
        if canonical_json(recorded.get(name)) != canonical_json(new.get(name))
    ]


def compare_consequences(
    step: int,
    call_seq: int,
    recorded: Sequence[tuple[int, str, Mapping[str, Any]]],
    new: Sequence[tuple[str, Mapping[str, Any]]],
) -> ActionDivergence | None:
    """Compare what a model call led to, in order: recorded ``(seq, kind, payload)`` against
    the replay's ``(kind, payload)``. The first consequence that differs, or None."""
    for index in range(max(len(recorded), len(new))):
        if (
            index < len(recorded)
            and index < len(new)
            and _same_as_written(recorded[index][1:], new[index])
        ):
            continue
        old = (
            canonical_action(recorded[index][1], recorded[index][2])
            if index < len(recorded)
            else None
        )
        fresh = canonical_action(*new[index]) if index < len(new) else None
        if old is not None and fresh is not None and canonical_json(old) == canonical_json(fresh):
            continue
        seq = recorded[index][0] if index < len(recorded) else call_seq
        return ActionDivergence(
            step=step,
            recorded_seq=seq,
            index=index,
            recorded=old,
            new=fresh,
            fields=field_changes(old or {}, fresh or {}),
            summary=f"model call {step}: {_what(old, fresh)}",
        )
    return None


def _same_as_written(
    recorded: tuple[str, Mapping[str, Any]], new: tuple[str, Mapping[str, Any]]
) -> bool:
    """The same kind with the same payload (volatile fields aside, ``_equal``): then their
    canonical forms are equal too, and the event classes need not read them (a replay
    compares every step's actions twice)."""
    (old_kind, old), (new_kind, fresh) = recorded, new
    return old_kind == new_kind and _equal(_bare(old), _bare(fresh))


def _equal(a: Any, b: Any) -> bool:
    """Equal as canonical JSON: as ``==``, except that a bool is no number (``True == 1`` in
    Python, not in JSON); an integral float and its int are equal, as canonical JSON writes
    them."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def _bare(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if key not in VOLATILE_FIELDS}


def _a(kind: str) -> str:
    """``kind`` with its article: "an error", "a file.edit"."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _what(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    if old is None and new is not None:
        return f"the agent did more than recorded ({_a(new['kind'])})"
    if new is None and old is not None:
        return f"the agent did less than recorded (no {old['kind']})"
    assert old is not None and new is not None
    if old["kind"] != new["kind"]:
        return f"the agent made {_a(new['kind'])} where the recording has {_a(old['kind'])}"
    changed = ", ".join(change.field for change in field_changes(old, new))
    return f"the agent's {new['kind']} differs from the recorded one ({changed})"
