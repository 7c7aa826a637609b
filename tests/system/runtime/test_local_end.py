"""Closing a local sandbox waits for its process to exit, not for its output pipes to close:
a process of the jail that outlives it (killed with the cgroup, after the wait) holds them.
On Python 3.11 ``process.wait()`` waits for both, and closing a pool while its spare sandbox
started hung a test run for ten minutes; against that code this test waits out its bound."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from app.runtime.local.runtime import _end


async def test_a_sandbox_whose_pipes_outlive_it_ends_at_once(tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    # a grandchild in a session of its own (out of the process group close() kills) holds the
    # child's stdout and stderr, as a process of the jail can
    process = await asyncio.create_subprocess_exec(
        "sh", "-c", f"setsid sleep 60 & echo $! > {pid_file}; exec sleep 300",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.02)
        async with asyncio.timeout(20):  # the pipes stay open for 60 s
            await _end(process, grace=0.0)
        assert process.returncode == -signal.SIGKILL
    finally:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


async def test_a_sandbox_that_ends_on_sigterm_is_not_killed(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        "sleep", "300", stdout=asyncio.subprocess.PIPE, start_new_session=True
    )
    await _end(process, grace=5.0)
    assert process.returncode == -signal.SIGTERM
