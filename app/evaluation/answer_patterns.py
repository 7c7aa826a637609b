"""Searching a finish message for a suite's ``regex:`` answer, in bounded time.

A suite's pattern is input from whoever wrote the suite (or sent it to the API), and a
backtracking matcher can take exponential time on a short text (``^(a|a)+$`` against 31
``a`` and a ``!`` runs for hours). Patterns are compiled and searched with the ``regex``
package: it takes Python's ``re`` syntax, gives up after ``timeout`` seconds, and releases the
GIL while it matches, so a search run in a thread (``scoring.judge``) never stalls the event
loop. A search that runs out of time is reported as cut off, never waited for.
"""

from __future__ import annotations

import regex

from app.errors import ChronicleError

#: The longest a search of one finish message may take, in seconds.
SEARCH_SECONDS = 1.0


class PatternCutOff(ChronicleError):
    """The search ran longer than its time limit and was abandoned."""


def compile_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a usable regular expression (None: it is)."""
    try:
        regex.compile(pattern)
    except regex.error as exc:
        return str(exc)
    return None


def pattern_found(pattern: str, text: str, seconds: float = SEARCH_SECONDS) -> bool:
    """Whether ``pattern`` occurs anywhere in ``text``; ``PatternCutOff`` when finding out
    takes longer than ``seconds``."""
    try:
        return regex.search(pattern, text, timeout=seconds) is not None
    except TimeoutError:
        raise PatternCutOff(f"took longer than {seconds:g} s") from None
