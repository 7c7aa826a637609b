"""The `chronicle` command as a subprocess, configured the way the application runs it (and
one command's handler in the test's own process, for setup)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import io
import os
import subprocess
from pathlib import Path

from tests.support.forked import chronicle_run


def chronicle(
    *args: str, env: dict[str, str], timeout: float = 60, fresh: bool = False
) -> subprocess.CompletedProcess:
    """``chronicle ARGS`` as a process (forked, see tests/support/forked.py; ``fresh``: a new
    interpreter, for a test of what a process's start costs)."""
    return chronicle_run(
        list(args), env=env, capture_output=True, text=True, timeout=timeout, fresh=fresh
    )


def in_process(env: dict[str, str], *args: str) -> str:
    """What a `chronicle` command prints, run in this process: its parser and its handler,
    with the settings its environment ``env`` names (database, owner's login, data dir), on a
    thread of its own (the caller may be inside an event loop). For a test's setup only (a
    command under test runs as a process); its errors are raised, not printed. Its stdout is
    taken with ``redirect_stdout``, which is process-wide: the caller waits meanwhile."""
    from app.cli import build_parser, dispatch
    from app.config import Settings

    parsed = build_parser().parse_args(list(args))
    # the command's environment, as its process would read it (a server on the embedded
    # PostgreSQL has no database URL: its data dir names the server)
    settings = Settings(
        database_url=env.get("CHRONICLE_DATABASE_URL"),
        owner_database_url=env.get("CHRONICLE_OWNER_DATABASE_URL"),
        data_dir=Path(env["CHRONICLE_DATA_DIR"]),
    )
    out = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out):
            return dispatch(parsed, settings)  # the handler the command's module set

    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        status = thread.submit(run).result()
    assert status == 0, f"chronicle {' '.join(args)} ended {status}: {out.getvalue()}"
    return out.getvalue()


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
