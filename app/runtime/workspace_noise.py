"""Which paths a ``workspace.diff`` leaves out as noise: files a run makes as a side effect
that nobody reviews and no scorer needs (Python's bytecode caches, test and type-checker
caches, macOS folder metadata).

The rule: a path is noise when **any part** of it (a directory's name or the file's) matches
one of the patterns, as a shell glob over that one name (``fnmatch``, case-sensitive). So
``__pycache__`` leaves out everything beneath every ``__pycache__`` directory, and ``*.pyc``
every file whose name ends in ``.pyc``, wherever it is. The patterns are the setting
``workspace_diff_leave_out`` (``DEFAULT_LEAVE_OUT`` unless set; empty: nothing is left out).

Only the end's diff leaves noise out: the start (``workspace.snapshot``) keeps every file,
because a fork restores it and runs the recorded commands again over it, and a listing or a
test run there must see what the recording saw. A left-out path is treated like a skipped
one: the diff's tree keeps it as it was at the start, so applying the diff to the restored
start never touches it. The diff counts what it left out per pattern (``left_out``), and the
page says so ("12 files left out: __pycache__, *.pyc").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase

from app.events.workspace import LeftOut

#: Left out of ``workspace.diff`` by default.
DEFAULT_LEAVE_OUT: tuple[str, ...] = (
    "__pycache__",
    "*.pyc",
    "*.pyo",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".DS_Store",
)


def noise_pattern(path: str, patterns: Sequence[str]) -> str | None:
    """The first of ``patterns`` that some part of ``path`` (``a/b/c``) matches, or None."""
    parts = [part for part in path.split("/") if part]
    for pattern in patterns:
        if any(fnmatchcase(part, pattern) for part in parts):
            return pattern
    return None


def split_noise(paths: Iterable[str], patterns: Sequence[str]) -> tuple[list[str], list[LeftOut]]:
    """``paths`` without the noise, and how many were left out per pattern (in the patterns'
    order; a pattern that left nothing out is not listed)."""
    kept: list[str] = []
    counts: Counter[str] = Counter()
    for path in paths:
        pattern = noise_pattern(path, patterns) if patterns else None
        if pattern is None:
            kept.append(path)
        else:
            counts[pattern] += 1
    return kept, [LeftOut(pattern=p, files=counts[p]) for p in patterns if counts[p]]
