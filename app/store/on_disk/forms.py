"""How a value appears in what Chronicle writes, so that a search of a file finds it however
it was written.

A string of the log is written as it is (a CSV cell, a Parquet cell), inside a JSON string
(its quotes, backslashes and controls escaped; every non-ASCII character too in a line that
must be ASCII), or in its escaped stored form (``$esc``: NUL and lone surrogates written as
escapes, backslashes doubled). A string may itself hold JSON text (a tool call's arguments, a
Parquet cell of a payload), where the value is JSON-escaped once more.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from app.events.stored_form import escape_text

#: What a string holding the value is replaced with (a reader sees it as a redacted string).
REDACTED_TEXT = "[redacted]"


def _json(text: str, *, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]


def _unique(forms: list[str]) -> list[str]:
    return [form for index, form in enumerate(forms) if form and form not in forms[:index]]


def in_strings(value: str) -> list[str]:
    """What a decoded string (a payload's, a cell's) holds where it holds ``value``: the
    value, its escaped stored form, and either as JSON text inside the string."""
    bases = _unique([value, escape_text(value)])
    return _unique(
        bases
        + [_json(base, ascii_only=ascii_only) for base in bases for ascii_only in (False, True)]
    )


def in_bytes(value: str) -> list[bytes]:
    """What the bytes of a file hold where they hold ``value``: each of ``in_strings``, also
    inside a JSON string (a JSON line, an ATIF document) and as a CSV cell writes it (quotes
    doubled); the forms UTF-8 can hold (a lone surrogate is only ever written escaped)."""
    strings = in_strings(value)
    texts = _unique(
        strings
        + [_json(text, ascii_only=ascii_only) for text in strings for ascii_only in (False, True)]
        + [text.replace('"', '""') for text in strings]
    )
    forms: list[bytes] = []
    for text in texts:
        try:
            forms.append(text.encode("utf-8"))
        except UnicodeEncodeError:
            continue
    return forms


#: One value, or several (the strings of a part a redaction removed).
Values = str | Sequence[str]


def as_values(value: Values) -> list[str]:
    """``value`` as a list of values (a string is one value, not its characters)."""
    return [value] if isinstance(value, str) else list(value)


def string_holds(value: Values) -> Callable[[str], bool]:
    """Whether a decoded string holds ``value``, or any of several (see ``in_strings``)."""
    forms = [form for each in as_values(value) for form in in_strings(each)]
    return lambda text: any(form in text for form in forms)


def byte_pattern(value: Values) -> re.Pattern[bytes]:
    """One pattern matching any of ``in_bytes`` of each value (nothing, for no value)."""
    forms = [form for each in as_values(value) for form in in_bytes(each)]
    if not forms:
        return re.compile(b"(?!)")
    return re.compile(b"|".join(re.escape(form) for form in forms))
