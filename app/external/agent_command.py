"""The agent's command that ``chronicle record`` runs: found as a shell finds it, run with
signals passed on, its end read as a shell reads it (127 not found, 126 not runnable, 128 + N
ended by signal N).

The command runs in this process's process group, so an interactive agent keeps the
terminal. A key press there (Ctrl-C) signals the whole group, the command included, so SIGINT
and SIGHUP are passed on only when they did not come from it (this process is not the
terminal's foreground: a script, a supervisor, ``kill``); SIGTERM always is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

from app.errors import ChronicleError

#: Exit codes a shell uses: the command was not found / could not be run.
NOT_FOUND = 127
NOT_RUNNABLE = 126
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: What a terminal sends its foreground process group itself.
FROM_TERMINAL = frozenset({signal.SIGINT, signal.SIGHUP})


class RecordError(ChronicleError):
    """``chronicle record`` cannot record the command; the message says why and what to do.
    ``exit_code``: what the command line exits with."""

    exit_code = 1


class CommandNotFound(RecordError):
    exit_code = NOT_FOUND


class NotRunnable(RecordError):
    exit_code = NOT_RUNNABLE


def find_command(command: Sequence[str], cwd: Path, environ: Mapping[str, str]) -> str:
    """The program the command runs: a name on ``PATH``, or a path with a slash (relative to
    ``cwd``, where it runs); ``CommandNotFound`` / ``NotRunnable`` in one sentence. Checked
    before anything is recorded, so a typo leaves no session behind."""
    if not command:
        raise RecordError("give the command to record after --, e.g. chronicle record -- aider")
    program = command[0]
    if "/" in program:
        path = Path(program) if Path(program).is_absolute() else cwd / program
        if not path.is_file():
            raise CommandNotFound(f"the command {program!r} was not found (no file {path})")
        if not os.access(path, os.X_OK):
            raise NotRunnable(f"the command {program!r} cannot be run: {path} is not executable")
        return str(path)
    found = shutil.which(program, path=environ.get("PATH", os.defpath))
    if found is None:
        raise CommandNotFound(
            f"the command {program!r} was not found on PATH; check its name, or give its path"
        )
    return found


def exit_code_of(returncode: int) -> int:
    """A child's return code as a shell reports it: ended by signal N is 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


async def run_forwarding_signals(
    command: Sequence[str], cwd: Path, environ: Mapping[str, str]
) -> int:
    """Run the command until it exits; its return code (negative: the signal that ended it).
    Cancelled, it ends the command (SIGTERM) before it goes."""
    try:
        process = await asyncio.create_subprocess_exec(*command, cwd=cwd, env=dict(environ))
    except FileNotFoundError:
        raise CommandNotFound(f"the command {command[0]!r} was not found") from None
    except PermissionError:
        raise NotRunnable(f"the command {command[0]!r} cannot be run (not executable)") from None
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []

    def forward(sig: signal.Signals) -> None:
        if sig in FROM_TERMINAL and _foreground_of_terminal():
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sig)

    try:
        for sig in FORWARDED:
            loop.add_signal_handler(sig, forward, sig)
            handled.append(sig)
        return await process.wait()
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            await process.wait()


def _foreground_of_terminal() -> bool:
    """Whether this process group is the foreground of the controlling terminal (whose key
    presses signal the command as well)."""
    try:
        terminal = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:  # no controlling terminal
        return False
    try:
        return os.tcgetpgrp(terminal) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(terminal)
