"""Whole-number options, with the bounds of what they end up in.

A number argparse's ``int`` takes (``-1``, ``99999999999999999999``) went on to PostgreSQL,
which refused it with a driver error ("DataError", "the database refused the write: None
(22000)"), or was taken silently (``--after -1``). Each option here is checked where it is
read, and refused in a sentence (argparse's usage error, exit 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from app.events import MAX_SEQ

#: The largest count an option may give (a PostgreSQL ``integer``, as ``LIMIT`` takes it).
MAX_COUNT = 2**31 - 1


def whole_number(low: int, high: int, what: str) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high``, ``what`` naming it."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} (a whole number)") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{value} is not {what}: it goes from {low} to {high:,}"
            )
        return value

    parse.__name__ = what  # argparse names the type in its own messages
    return parse


#: A seq that names an event: seqs start at 1.
seq_number = whole_number(1, MAX_SEQ, "a seq")
#: Where to start reading: after this seq (0: from the first event).
seq_after = whole_number(0, MAX_SEQ, "a seq to start after")
#: A count: 1 or more.
positive = whole_number(1, MAX_COUNT, "a count")
