"""Token counts as a model sent them: what can be counted, and what is unknown.

A server behind an OpenAI-compatible URL sends whatever it likes as usage: ``12``, ``"12"``,
``12.0``, but also ``1e999``, ``"abc"``, ``-5`` or ``10**25``. A count is kept when it is a
whole number from 0 to ``MAX_COUNT`` (2^53 - 1: what every JSON reader, a browser's too,
holds exactly, and far beyond any real reply); anything else is unknown (None), never an
error: the reply that carried it is still the model's answer. The analytics views read a
count by the same rule (``chronicle_count``, migration 0018), so a payload written before,
or imported from elsewhere, cannot break them either.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: The largest count kept (``chronicle_count`` in migration 0018 uses the same bound).
MAX_COUNT = 2**53 - 1
#: A string of a usage as sent longer than this is cut (the rest is not a count anyway).
_TEXT_LIMIT = 100
#: Keys of an object, items of a list, levels of nesting kept of a usage as sent.
_ITEMS_LIMIT = 40
_DEPTH_LIMIT = 4


def token_count(value: Any) -> int | None:
    """``value`` as a count (an int, ``12.0``, ``"12"``), or None when it is none of those."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text or len(text) > 30:
            return None
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                return None
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            return None
        value = int(value)
    if isinstance(value, int) and 0 <= value <= MAX_COUNT:
        return value
    return None


def safe_copy(value: Any, depth: int = 0) -> Any:
    """``value`` (a usage object as sent, parsed) in a form any event can hold: numbers a
    JSON reader would not read exactly (``inf``, ``10**25``) as their text, long strings cut,
    big containers and deep nesting left out (None)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if abs(value) <= MAX_COUNT:
            return value
        if value.bit_length() > 10_000:  # beyond what str() writes
            return f"an integer of {value.bit_length()} bits"
        return _cut(str(value))
    if isinstance(value, float):
        return value if math.isfinite(value) and abs(value) <= MAX_COUNT else repr(value)
    if isinstance(value, str):
        return _cut(value)
    if depth >= _DEPTH_LIMIT:
        return None
    if isinstance(value, Mapping):
        items = list(value.items())[:_ITEMS_LIMIT]
        return {_cut(str(k)): safe_copy(v, depth + 1) for k, v in items if v is not None}
    if isinstance(value, list | tuple):
        return [safe_copy(item, depth + 1) for item in value[:_ITEMS_LIMIT]]
    return _cut(repr(value))


def _cut(text: str) -> str:
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"
