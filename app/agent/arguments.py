"""Tool-call arguments coerced to the tool's JSON schema, the way models actually send them.

Models write ``"is_input": "false"``, ``"timeout": "5"``, ``"view_range": "[1, 20]"`` or
``null`` for an argument they mean to leave out. Taken literally, ``bool("false")`` is True
and a command meant to run is typed into a process that is not there. Each top-level argument
is converted with pydantic's lax mode (the conversions the field relies on: "false"/"0"/"no"
are false, "5" is 5) to the type its schema names; what cannot be converted, a number that is
not finite (``1e999``), a value outside an ``enum``, or a missing required argument is an
``InvalidToolCall`` whose message the model reads, naming every problem at once.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from pydantic import AllowInfNan, TypeAdapter, ValidationError

from app.errors import ChronicleError

_BOOLEAN: TypeAdapter[bool] = TypeAdapter(bool)
_INTEGER: TypeAdapter[int] = TypeAdapter(int)
_NUMBER: TypeAdapter[float] = TypeAdapter(Annotated[float, AllowInfNan(False)])


class InvalidToolCall(ChronicleError, ValueError):
    """A tool call that cannot become an action; the message is shown to the model."""


class _Mismatch(ChronicleError, ValueError):
    """One argument that does not fit its schema; the message says what it should be."""


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, allow_nan=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_text(value: str, want: type, name: str) -> Any:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, want):
        raise _Mismatch(f"must be {name}, not {_shown(value)}")
    return parsed


def _one_type(value: Any, kind: str, spec: dict[str, Any]) -> Any:
    """``value`` as JSON-schema type ``kind``, or ``_Mismatch``."""
    if kind == "null":
        if value is None:
            return None
        raise _Mismatch("must be null")
    if kind == "boolean":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        try:
            return _BOOLEAN.validate_python(value)
        except ValidationError:
            raise _Mismatch(f"must be true or false, not {_shown(value)}") from None
    if kind in ("integer", "number"):
        if isinstance(value, bool) or value is None or isinstance(value, list | dict):
            raise _Mismatch(f"must be a number, not {_shown(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise _Mismatch(f"must be a finite number, not {_shown(value)}")
        try:
            number = _NUMBER.validate_python(value.strip() if isinstance(value, str) else value)
        except ValidationError as exc:
            if exc.errors()[0]["type"] == "finite_number":
                raise _Mismatch(f"must be a finite number, not {_shown(value)}") from None
            raise _Mismatch(f"must be a number, not {_shown(value)}") from None
        if kind == "number":
            return int(number) if isinstance(value, int) else number
        if not number.is_integer():
            raise _Mismatch(f"must be a whole number, not {_shown(value)}")
        return _INTEGER.validate_python(number)
    if kind == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                raise _Mismatch(f"must be a string, not {_shown(value)}")
            return json.dumps(value)
        raise _Mismatch(f"must be a string, not {_shown(value)}")
    if kind == "array":
        items = _json_text(value, list, "a JSON array") if isinstance(value, str) else value
        if not isinstance(items, list):
            raise _Mismatch(f"must be a JSON array, not {_shown(value)}")
        item_spec = spec.get("items")
        if isinstance(item_spec, dict):
            converted = []
            for index, item in enumerate(items):
                try:
                    converted.append(coerce_value(item, item_spec))
                except _Mismatch as exc:
                    raise _Mismatch(f"item {index} {exc}") from None
            return converted
        return items
    if kind == "object":
        mapping = _json_text(value, dict, "a JSON object") if isinstance(value, str) else value
        if not isinstance(mapping, dict):
            raise _Mismatch(f"must be a JSON object, not {_shown(value)}")
        return mapping
    return value  # a type this module does not know: passed on as sent


def coerce_value(value: Any, spec: dict[str, Any]) -> Any:
    """One value converted to its schema ``spec`` (``type``, a list of types, ``enum``)."""
    kinds = spec.get("type")
    if isinstance(kinds, str):
        kinds = [kinds]
    if not kinds:
        converted = value
        if isinstance(value, float) and not math.isfinite(value):
            raise _Mismatch(f"must be a finite number, not {_shown(value)}")
    else:
        problems = []
        for kind in sorted(kinds, key=lambda k: k != "null"):  # null first: None stays None
            try:
                converted = _one_type(value, kind, spec)
                break
            except _Mismatch as exc:
                problems.append(str(exc))
        else:
            raise _Mismatch(problems[0] if len(problems) == 1 else " or ".join(problems))
    choices = spec.get("enum")
    if isinstance(choices, list) and choices and converted not in choices:
        raise _Mismatch(f"must be one of {', '.join(map(str, choices))}, not {_shown(value)}")
    return converted


def coerce_arguments(
    tool: str, arguments: dict[str, Any], schema: dict[str, Any]
) -> dict[str, Any]:
    """The arguments converted to ``schema`` (a tool's ``parameters``); ``InvalidToolCall``
    listing every argument that is missing or cannot be converted.

    An argument sent as ``null`` counts as not sent (models write null for "leave out").
    Arguments the schema does not name pass through unchanged: the tool decides about them.
    """
    properties: dict[str, Any] = schema.get("properties") or {}
    required = [name for name in schema.get("required") or [] if isinstance(name, str)]
    out: dict[str, Any] = {}
    problems: list[str] = []
    for name, value in arguments.items():
        spec = properties.get(name)
        if value is None and not _allows_null(spec):
            continue
        if not isinstance(spec, dict):
            out[name] = value
            continue
        try:
            out[name] = coerce_value(value, spec)
        except _Mismatch as exc:
            problems.append(f"{name} {exc}")
    problems.extend(
        f"missing {name}" for name in required if arguments.get(name) is None and name not in out
    )
    if problems:
        raise InvalidToolCall(f"{tool} was called with bad arguments: {'; '.join(problems)}")
    return out


def _allows_null(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return False
    kinds = spec.get("type")
    return kinds == "null" or (isinstance(kinds, list) and "null" in kinds)
