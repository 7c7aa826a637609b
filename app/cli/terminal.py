"""Text from the log reaches an admin's terminal with its control characters shown escaped.

A member writes session titles, messages and (through the agent) command output; the CLI
prints them to whoever reads the log, an admin included. Printed raw, ``\\x1b]0;...\\x07``
retitles that admin's terminal window, ``\\x1b[2J`` clears it, and other sequences move the
cursor over earlier lines or, on some terminals, answer back into the shell. So every text the
command writes to stdout or stderr passes ``escape_controls`` (``escaped_streams`` wraps both
streams for the whole command): an escape or bell character is shown as ``\\x1b`` / ``\\x07``,
newlines and tabs are kept (reports and tables are multi-line).

``--json`` output stays exact JSON: a JSON encoder never leaves a C0 control raw (they are
escaped inside strings), and the characters it may leave raw (DEL, the C1 controls
U+0080-U+009F, the bidirectional overrides that make text read backwards) are written as
``\\u009b``: inside a JSON string that is the same character, outside one they cannot occur.
What must reach the terminal as a control on purpose (the spinner's ``\\r\\x1b[K``) is
written to ``raw(stream)``, and so is an export, which is data.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

#: C0 controls but newline and tab, DEL, C1 controls, bidirectional embeddings and overrides.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character a terminal would act on shown as its escape."""
    return CONTROLS.sub(_escaped, text)


class EscapingStream:
    """A text stream that writes everything through ``escape_controls`` to ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        self.raw = stream

    def write(self, text: str) -> int:
        self.raw.write(escape_controls(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding, buffer, ...
        return getattr(self.raw, name)


def raw(stream: TextIO | EscapingStream) -> TextIO:
    """The stream under the escaping, for controls written on purpose and for data."""
    return stream.raw if isinstance(stream, EscapingStream) else stream


@contextlib.contextmanager
def escaped_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` escape control characters while the command runs
    (logging's handlers made meanwhile write through them too)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, EscapingStream):
        sys.stdout = EscapingStream(sys.stdout)  # type: ignore[assignment]
    if not isinstance(sys.stderr, EscapingStream):
        sys.stderr = EscapingStream(sys.stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
