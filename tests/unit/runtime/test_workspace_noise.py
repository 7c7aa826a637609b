"""The rule that leaves noise out of a workspace.diff: a path is noise when any part of it
matches a pattern (a glob over that one name); what is left out is counted per pattern."""

from __future__ import annotations

import pytest

from app.events.workspace import LeftOut
from app.runtime.workspace_noise import DEFAULT_LEAVE_OUT, noise_pattern, split_noise


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("__pycache__/app.cpython-311.pyc", "__pycache__"),
        ("src/pkg/__pycache__/mod.cpython-312.opt-1.pyc", "__pycache__"),
        ("src/pkg/__pycache__/notes.txt", "__pycache__"),  # everything beneath it
        ("old/mod.pyc", "*.pyc"),
        ("mod.pyo", "*.pyo"),
        (".pytest_cache/v/cache/lastfailed", ".pytest_cache"),
        ("tests/.mypy_cache/3.11/app.data.json", ".mypy_cache"),
        (".ruff_cache/0.6.0/123", ".ruff_cache"),
        ("docs/.DS_Store", ".DS_Store"),
    ],
)
def test_noise_by_default(path: str, pattern: str) -> None:
    assert noise_pattern(path, DEFAULT_LEAVE_OUT) == pattern


@pytest.mark.parametrize(
    "path",
    [
        "app.py",
        "pycache/mod.py",  # not __pycache__
        "__pycache__.py",  # a file named so is a part matched whole: __pycache__.py is not it
        "notes.pyc.txt",  # *.pyc matches a name that ends in .pyc
        "src/mod.PYC",  # case-sensitive, as git and Linux paths are
        ".pytest_cache_notes",
        "build/output.bin",
    ],
)
def test_kept_by_default(path: str) -> None:
    assert noise_pattern(path, DEFAULT_LEAVE_OUT) is None


def test_split_counts_each_pattern_in_the_patterns_order() -> None:
    paths = [
        "a.py",
        "__pycache__/a.cpython-311.pyc",  # the first pattern that matches counts it
        "pkg/__pycache__/b.cpython-311.pyc",
        "legacy/c.pyc",
        "pkg/b.py",
    ]
    kept, left_out = split_noise(paths, DEFAULT_LEAVE_OUT)
    assert kept == ["a.py", "pkg/b.py"]
    assert left_out == [LeftOut(pattern="__pycache__", files=2), LeftOut(pattern="*.pyc", files=1)]


def test_no_patterns_leave_nothing_out() -> None:
    paths = ["__pycache__/a.pyc", "b.pyc"]
    assert split_noise(paths, []) == (paths, [])


def test_own_patterns() -> None:
    kept, left_out = split_noise(
        ["build/x.o", "node_modules/y/z.js", "a.c"], ["*.o", "node_modules"]
    )
    assert kept == ["a.c"]
    assert [(o.pattern, o.files) for o in left_out] == [("*.o", 1), ("node_modules", 1)]
