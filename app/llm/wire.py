"""What can travel to a model: the request as UTF-8 JSON.

A lone surrogate (``"caf\\udce9"``: how Python spells a file name byte that is not UTF-8, or
what a model once sent as a JSON escape) is valid in a Python string and in the log, but not
in UTF-8, and litellm's HTTP client fails to encode the whole request on it. On the way out
each is written as its backslash escape (``caf\\\\udce9``), which keeps what it was (unlike
U+FFFD) and which a model can send back as a JSON escape. The recorded prompt keeps the text
as it was; only the request changes.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def for_the_wire(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) backslash-escaped; the
    same object when it holds none."""
    if isinstance(value, str):
        if value.isascii() or not _SURROGATE.search(value):  # isascii: a C-speed fast path
            return value
        return _SURROGATE.sub(_escaped, value)
    if isinstance(value, dict):
        items = [(for_the_wire(k), for_the_wire(v)) for k, v in value.items()]
        changed = any(
            k is not k0 or v is not v0
            for (k, v), (k0, v0) in zip(items, value.items(), strict=True)
        )
        return dict(items) if changed else value
    if isinstance(value, list):
        converted = [for_the_wire(item) for item in value]
        changed = any(new is not old for new, old in zip(converted, value, strict=True))
        return converted if changed else value
    return value
