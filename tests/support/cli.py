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


def cli_environment(database_url: str, tmp_path: Path) -> dict[str, str]:
    """This process's environment with the database, a private data dir and no config file."""
    return {
        **os.environ,
        "CHRONICLE_DATABASE_URL": database_url,
        "CHRONICLE_DATA_DIR": str(tmp_path / "data"),
        "CHRONICLE_CONFIG": str(tmp_path / "none.toml"),
    }
