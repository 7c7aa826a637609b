"""The linters the project is held to run with the tests, so CI enforces them."""

from __future__ import annotations

import subprocess
import sys

from tests.support.repository import ROOT

CHECKED = ("app", "tests", "bench", "migrations", "runtime_image")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_ruff_lint_and_format() -> None:
    lint = run("ruff", "check", *CHECKED)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = run("ruff", "format", "--check", *CHECKED)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy() -> None:
    result = run("mypy", "app", "runtime_image/chronicle_sandbox")
    assert result.returncode == 0, result.stdout + result.stderr
