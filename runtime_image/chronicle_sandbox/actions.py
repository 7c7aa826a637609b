"""Turn one action payload into one observation payload (both plain JSON objects)."""

from __future__ import annotations

import math
from typing import Any

from .files import FileActionError, Files
from .shell import Shell
from .text import printable

#: The kinds whose ``handled_by`` is "sandbox" in app/events (this package cannot import it;
#: tests/unit/events/test_kinds.py keeps the two equal).
RUNNABLE = ("run", "file.read", "file.write", "file.edit")


class ActionError(ValueError):
    """The action itself is malformed."""


def _field(
    action: dict[str, Any], name: str, kind: type | tuple[type, ...], required: bool = True
) -> Any:
    value = action.get(name)
    if value is None:
        if required:
            raise ActionError(f"{action.get('kind')} needs the field {name!r}")
        return None
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ActionError(f"{name!r} must be a number")
    if not isinstance(value, kind):
        raise ActionError(f"{name!r} has the wrong type ({type(value).__name__})")
    return value


def _command(action: dict[str, Any]) -> str:
    """The command, which the shell gets as bytes: a lone surrogate standing for a byte
    (U+DC80..U+DCFF, how Python spells bytes that are not UTF-8) is that byte; any other
    stands for nothing and is refused."""
    command: str = _field(action, "command", str)
    try:
        command.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        bad = printable(command[exc.start : exc.end])
        raise ActionError(
            f"the command holds the lone surrogate {bad}, which stands for no byte"
        ) from None
    return command


def error(message: str, error_type: str) -> dict[str, Any]:
    return {"kind": "error", "message": message, "error_type": error_type}


class Executor:
    """Dispatches actions to the shell and the file operations of one sandbox."""

    def __init__(self, shell: Shell, files: Files) -> None:
        self.shell = shell
        self.files = files

    def execute(self, action: Any) -> dict[str, Any]:
        if not isinstance(action, dict):
            return error("an action is a JSON object with a 'kind'", "invalid_action")
        kind = action.get("kind")
        try:
            if kind == "run":
                timeout = _field(action, "timeout", (int, float), required=False)
                if timeout is not None and not (0 < timeout < math.inf):
                    raise ActionError("'timeout' must be a positive, finite number of seconds")
                return self.shell.run(
                    _command(action),
                    float(timeout) if timeout is not None else None,
                    bool(action.get("is_input", False)),
                )
            if kind == "file.read":
                start = _field(action, "start", int, required=False) or 1
                end = _field(action, "end", int, required=False)
                return self.files.read(_field(action, "path", str), start, end)
            if kind == "file.write":
                return self.files.write(_field(action, "path", str), _field(action, "content", str))
            if kind == "file.edit":
                _field(action, "command", str)
                _field(action, "path", str)
                return self.files.edit(action)
        except ActionError as exc:
            return error(str(exc), "invalid_action")
        except FileActionError as exc:
            return error(str(exc), "file")
        return error(
            f"this sandbox cannot run {kind!r} actions; it runs {', '.join(RUNNABLE)}",
            "unknown_action",
        )
