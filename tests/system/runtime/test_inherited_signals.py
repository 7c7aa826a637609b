"""A Chronicle started in the background (``&`` in a script, ``nohup``) inherits SIGINT, SIGQUIT
or SIGHUP ignored, and so did every command its local sandbox ran: Ctrl-C sent to a command did
nothing (``sleep 1000`` kept running) and a timed-out command could not be interrupted."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.events import Run, RunOutput
from tests.support.sandboxes import started_runtime


@pytest.fixture
def ignoring_interrupts() -> Iterator[None]:
    """This process ignores what a background start ignores, while the sandbox is started."""
    kept = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)


async def test_ctrl_c_reaches_a_command_of_a_sandbox_started_ignoring_it(
    ignoring_interrupts: None, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with started_runtime("local", workspace, tmp_path) as runtime:
        waiting = await runtime.execute(Run(command="sleep 1000"))
        assert isinstance(waiting, RunOutput) and waiting.still_running
        stopped = await runtime.execute(Run(command="C-c", is_input=True))
        assert isinstance(stopped, RunOutput)
        assert stopped.exit_code == 130 and not stopped.still_running, stopped
        quit_ignored = await runtime.execute(Run(command="trap -p QUIT INT; echo done"))
        assert isinstance(quit_ignored, RunOutput) and quit_ignored.output == "done\n"
