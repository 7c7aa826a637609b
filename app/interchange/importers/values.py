"""Reading untrusted JSON values the way recordings really hold them.

Recordings are written by other programs over years of format changes: a field is missing,
null, a number written as a string, a text given as a list of content parts. These helpers
read such a value as the type wanted, or say it is absent; the importers decide what is an
error (the one field they cannot do without) and what is left at its default.
"""

from __future__ import annotations

import json
import math
from typing import Any

from app.interchange.importers.model import ImportProblem


def load_json(file: str, data: bytes, *, line: int | None = None) -> Any:
    """``data`` parsed; NaN and Infinity (which Python's json writes) read as null."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportProblem(
            file, f"is not UTF-8 text (byte {exc.start} cannot be decoded)", line=line
        ) from None
    try:
        return json.loads(text, parse_constant=lambda _: None)
    except json.JSONDecodeError as exc:
        raise ImportProblem(
            file, f"is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", line=line
        ) from None
    except RecursionError:
        raise ImportProblem(
            file, "is not JSON this reader can take (nested too deeply)", line=line
        ) from None


def text_of(value: Any) -> str:
    """A text field: a string as it is, content parts (``[{"type": "text", "text": ...}]``)
    joined, null as empty, anything else as its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, dict) for part in value):
        return "".join(str(part.get("text", "")) for part in value if part.get("type") == "text")
    return json.dumps(value, ensure_ascii=False)


def mapping(value: Any) -> dict[str, Any]:
    """An object field; anything else reads as empty."""
    return value if isinstance(value, dict) else {}


def json_object(value: Any) -> dict[str, Any]:
    """Tool call arguments: JSON text (or an object); anything but an object reads as none."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return {}
    return value if isinstance(value, dict) else {}


def integer(value: Any) -> int | None:
    """An integer, also written as a string or an integral float; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def number(value: Any) -> float | None:
    """A finite number, also written as a string; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def first_line(text: str, limit: int = 100) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."
