"""Session ids by a prefix: people copy the first 8 characters the page and the CLI show, so
every place that takes a session id also takes a unique prefix of it. PostgreSQL orders
``uuid`` values byte by byte, as their hex text orders, so a prefix is a range of the uuid
index: no text cast, no scan."""

from __future__ import annotations

import re
import uuid

from app.errors import ChronicleError

#: Fewer characters than this match too many sessions to be worth a lookup.
MIN_PREFIX = 4
_PREFIX = re.compile(rf"[0-9a-f]{{{MIN_PREFIX},32}}")


class NotAnIdPrefix(ChronicleError, ValueError):
    """The text is neither a session id nor a prefix of one."""


def id_prefix(text: str) -> str:
    """The hex digits of a session-id prefix (dashes dropped, lower case), or
    ``NotAnIdPrefix`` saying what a prefix is."""
    digits = text.strip().lower().replace("-", "")
    if not _PREFIX.fullmatch(digits):
        raise NotAnIdPrefix(
            f"{text!r} is not a session id or a prefix of one (at least {MIN_PREFIX} hex digits)"
        )
    return digits


def prefix_range(prefix: str) -> tuple[uuid.UUID, uuid.UUID]:
    """The first and last uuid that begin with ``prefix`` (its hex digits, from ``id_prefix``)."""
    digits = id_prefix(prefix)
    return uuid.UUID(digits.ljust(32, "0")), uuid.UUID(digits.ljust(32, "f"))


#: How many of the sessions an ambiguous prefix begins are named (one more is looked up, to
#: know whether there are others).
SHOWN_MATCHES = 3


def ambiguity(prefix: str, matches: list[uuid.UUID]) -> str:
    """Why a prefix names no single session, in one sentence (``matches``: the first
    ``SHOWN_MATCHES + 1`` it begins)."""
    if not matches:
        return f"no session id begins with {prefix}"
    shown = ", ".join(str(m) for m in matches[:SHOWN_MATCHES])
    others = ", ..." if len(matches) > SHOWN_MATCHES else ""
    return f"{prefix} begins more than one session id ({shown}{others}): give more of it"
