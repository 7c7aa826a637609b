"""The `chronicle` command as a subprocess, configured the way the application runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def chronicle(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def empty_settings_file(tmp_path: Path) -> Path:
    """An empty settings file: CHRONICLE_CONFIG must name a file that exists."""
    path = tmp_path / "chronicle.toml"
    path.touch()
    return path


def cli_environment(database_url: str, tmp_path: Path) -> dict[str, str]:
    """This process's environment with the database, a private data dir and an empty
    settings file (so that no user's settings apply)."""
    return {
        **os.environ,
        "CHRONICLE_DATABASE_URL": database_url,
        "CHRONICLE_DATA_DIR": str(tmp_path / "data"),
        "CHRONICLE_CONFIG": str(empty_settings_file(tmp_path)),
    }


def demo_session(env: dict[str, str]) -> str:
    """A recorded session made by ``chronicle demo``; its id."""
    demo = chronicle("demo", env=env)
    assert demo.returncode == 0, demo.stderr
    return next(word for word in demo.stdout.split() if word.count("-") == 4)
