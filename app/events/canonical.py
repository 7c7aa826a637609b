"""Canonical JSON and hashing: the one place that decides which bytes an event hashes to.

The hash chain is only verifiable if every writer and reader turns the same event into the
same bytes. Canonical JSON here means: keys sorted, no whitespace, UTF-8 (no ASCII escaping),
no NaN/Infinity, and numbers normalised so that a value survives a round trip through
PostgreSQL ``jsonb`` unchanged: an integral float is written as an integer (``1.0`` -> ``1``),
any other float as Python's shortest round-trip ``repr``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

_encoder = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


class CanonicalJsonError(ValueError):
    """A value cannot be represented as canonical JSON (and so cannot be stored)."""


def _normalise(value: Any, path: str) -> Any:
    """Return ``value`` with integral floats made ints; refuse what jsonb cannot hold."""
    if isinstance(value, str):
        if "\x00" in value:
            raise CanonicalJsonError(f"{path or 'value'}: NUL characters cannot be stored")
        return value
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise CanonicalJsonError(f"{path or 'value'}: NaN and Infinity are not JSON")
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalJsonError(f"{path or 'value'}: object keys must be strings")
            if "\x00" in key:
                raise CanonicalJsonError(f"{path or 'value'}: NUL characters cannot be stored")
            out[key] = _normalise(item, f"{path}.{key}" if path else key)
        return out
    if isinstance(value, list | tuple):
        return [_normalise(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise CanonicalJsonError(f"{path or 'value'}: {type(value).__name__} is not JSON")


def canonicalise(value: Any) -> tuple[Any, str]:
    """The normalised value and its canonical JSON text (the value is what a reader gets back)."""
    normalised = _normalise(value, "")
    text = _encoder.encode(normalised)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalJsonError("value contains a lone surrogate, which is not UTF-8") from exc
    return normalised, text


def canonical_json(value: Any) -> str:
    """Serialise ``value`` as canonical JSON text."""
    return canonicalise(value)[1]


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def format_timestamp(moment: datetime) -> str:
    """UTC with microseconds, the form the database uses when it hashes ``created_at``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def hashed_document(
    *,
    session_id: str,
    seq: int,
    event_id: str,
    kind: str,
    source: str,
    cause: int | None,
    payload: Any,
    schema_version: int,
    created_at: datetime,
) -> str:
    """Canonical JSON of an event without its hash: the bytes the chain is built over.

    The append function in the database (see the migrations) assembles exactly this text;
    ``EventStore.verify`` recomputes it from the stored columns.
    """
    return canonical_json(
        {
            "cause": cause,
            "created_at": format_timestamp(created_at),
            "event_id": event_id,
            "kind": kind,
            "payload": payload,
            "schema_version": schema_version,
            "seq": seq,
            "session_id": session_id,
            "source": source,
        }
    )


def chain_hash(previous: bytes, document: str) -> bytes:
    """sha256(previous event's hash ‖ canonical JSON of this event)."""
    return sha256(previous + document.encode("utf-8"))
