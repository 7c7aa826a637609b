"""Text that is always valid UTF-8, whatever the file system or the request held.

A Linux file name is bytes; Python gives the bytes that are not UTF-8 as lone surrogates
(U+DC80..U+DCFF, "surrogateescape"), and a JSON request may carry lone surrogates too. No
UTF-8 encoder accepts them, so everything the server answers goes through here first: a
surrogate that stands for a byte is shown as ``\\xNN``, any other as ``\\uDNNN``.
"""

from __future__ import annotations

import json
import re
from typing import Any

SURROGATE = re.compile("[\ud800-\udfff]")
#: Lone surrogates that stand for one undecodable byte each (Python's surrogateescape).
ESCAPED_BYTES = range(0xDC80, 0xDD00)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code in ESCAPED_BYTES:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every lone surrogate written out as an escape (valid UTF-8)."""
    return SURROGATE.sub(_escape, text)


def has_escapes(text: str) -> bool:
    """Whether ``printable`` would change ``text``."""
    return SURROGATE.search(text) is not None


def printable_value(value: Any) -> Any:
    """``value`` (JSON-like) with ``printable`` applied to every string in it, keys too."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_value(key): printable_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_value(item) for item in value]
    return value


def json_bytes(value: Any) -> bytes:
    """``value`` as UTF-8 JSON; strings no encoder takes are escaped, never an exception."""
    try:
        return json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(printable_value(value), ensure_ascii=False).encode("utf-8")
