"""An evaluation trial whose agent is a command (a suite task's ``agent: {command: [...]}``),
recorded as ``chronicle record`` records one: its own session (agent ``external``, the
trial's run, task and epoch in its ``session.created`` config), a token scoped to it, the
workspace's snapshot and diff, the exit code and wall time, every model call through the
gateway of the running ``chronicle serve``.

Unlike ``chronicle record``, many trials run at once inside ``chronicle eval run``, so a
command does not own the terminal: it runs in a process group of its own with no input, its
output goes to a log file beside its workspace (``eval run``'s own output stays the run's),
and it is stopped, its whole group, after the task's timeout or when the run is interrupted.
A command that fails, is not found or times out is a trial that failed (its session says
why), never a crash of the run. What would fail every trial alike (no server at the URL, an
unknown user, a server on another database) is said before any trial starts (``problem``), or
stops the run when it shows up mid-run (``RecordedTrial.stops_run``).

``chronicle eval replay`` replays such a trial the same way, through ``chronicle record
--replay``'s ``replay_command`` (``GatewayTrials.replay``).

The evaluation package sees this only through its ``CommandRecorder`` protocol
(``app/evaluation/external_agent.py``): the command line wires the two together.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from app.config import Settings
from app.external.agent_command import (
    CommandNotFound,
    NotRunnable,
    RecordError,
    find_command,
)
from app.external.record import Recording, check_gateway, check_server, record
from app.external.replay_command import replay_command
from app.replay.engine import ReplayMode, ReplayResult
from app.sessions.sql.users import find_user
from app.store import EventStore

#: The exit code a timed-out command is recorded with (as coreutils' ``timeout`` exits).
TIMED_OUT = 124
#: Seconds a stopped command's group has between SIGTERM and SIGKILL.
STOP_GRACE = 5.0


class CommandTimedOut(RecordError):
    exit_code = TIMED_OUT


@dataclass(frozen=True)
class RecordedTrial:
    """How a trial's command ended: its session (None: none was recorded), the outcome
    (``finished`` on exit 0, else ``error``), and why it failed, in a sentence."""

    session_id: UUID | None
    outcome: str
    error: str | None = None
    #: the failure is the gateway's or the user's, not the agent's: every trial would fail so
    stops_run: bool = False


async def run_in_background(
    command: Sequence[str],
    cwd: Path,
    environ: Mapping[str, str],
    *,
    output: Path,
    seconds: float,
) -> int:
    """Run the command in a process group of its own, no input, its output into ``output``;
    its return code. After ``seconds`` ``CommandTimedOut``; whatever it leaves
    running in its group when it ends, times out or is cancelled is stopped with it."""
    log = await asyncio.to_thread(output.open, "wb")
    try:
        try:
            process = await asyncio.create_subprocess_exec(
                *command, cwd=cwd, env=dict(environ), stdin=asyncio.subprocess.DEVNULL,
                stdout=log, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        except FileNotFoundError:
            raise CommandNotFound(f"the command {command[0]!r} was not found") from None
        except PermissionError:
            raise NotRunnable(
                f"the command {command[0]!r} cannot be run (not executable)"
            ) from None
        try:
            async with asyncio.timeout(seconds):
                return await process.wait()
        except TimeoutError:
            raise CommandTimedOut(
                f"the command did not finish within its timeout of {seconds:g} s; it was stopped"
            ) from None
        finally:
            await _stop_group(process)
    finally:
        await asyncio.to_thread(log.close)


async def _stop_group(process: asyncio.subprocess.Process) -> None:
    """End the command's process group: SIGTERM, then SIGKILL after ``STOP_GRACE``."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            async with asyncio.timeout(STOP_GRACE):
                await process.wait()
        except TimeoutError:
            pass
    # the command, or what it left behind (gone: nothing to do)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


class GatewayTrials:
    """Records trials' commands through the gateway of the server at ``gateway_url``, as
    ``user``'s sessions (``owner_store``: the owner's login, for an admin's token)."""

    def __init__(
        self,
        store: EventStore,
        settings: Settings,
        gateway_url: str,
        user: str,
        owner_store: Callable[[], Awaitable[EventStore]] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.gateway_url = gateway_url
        self.user = user
        self.owner_store = owner_store

    async def problem(self, commands: Sequence[Sequence[str]]) -> str | None:
        """What would fail every trial alike, in a sentence (None: nothing): no server
        answers at the URL, the user is not active, a program named without a path is not
        on ``PATH``."""
        try:
            await check_server(self.gateway_url)
            user = await find_user(self.store, self.user)
            if user is None or user.disabled_at is not None or user.removed_at is not None:
                raise RecordError(
                    f"no active user named {self.user!r} to record the agent commands as; give "
                    "one of `chronicle users list` (--user NAME or CHRONICLE_USER), or add it: "
                    "chronicle users add NAME"
                )
            for command in commands:
                if "/" not in command[0]:
                    find_command(command, Path.cwd(), os.environ)
        except RecordError as exc:
            return str(exc)
        return None

    async def record(
        self,
        command: Sequence[str],
        workspace: Path,
        environment: Mapping[str, str],
        config: Mapping[str, Any],
        seconds: float,
        output: Path,
    ) -> RecordedTrial:
        """Run and record one trial's command (see the module)."""
        started: list[UUID] = []

        async def runner(argv: Sequence[str], cwd: Path, environ: Mapping[str, str]) -> int:
            return await run_in_background(argv, cwd, environ, output=output, seconds=seconds)

        recording = Recording(
            command=list(command), workspace=workspace, gateway_url=self.gateway_url,
            user=self.user, config=config, environment=environment, runner=runner,
        )  # fmt: skip
        try:
            recorded = await record(
                self.store,
                self.settings,
                recording,
                check_gateway=lambda token: check_gateway(self.gateway_url, token),
                started=started.append,
                owner_store=self.owner_store,
            )
        except RecordError as exc:
            if not started:  # nothing ran: the server, the user or the database refused
                return RecordedTrial(None, "error", str(exc), stops_run=True)
            return RecordedTrial(started[0], "error", str(exc))
        if recorded.exit_code == 0:
            return RecordedTrial(recorded.session_id, "finished")
        if recorded.ended_by is not None:  # as its session's ending says: stopped, not failed
            return RecordedTrial(
                recorded.session_id, "stopped", f"the command was ended by {recorded.ended_by}"
            )
        return RecordedTrial(
            recorded.session_id, "error", f"the command exited with code {recorded.exit_code}"
        )

    async def replay(
        self,
        recording: UUID,
        command: Sequence[str],
        workspace: Path,
        environment: Mapping[str, str],
        config: Mapping[str, Any],
        mode: ReplayMode,
        seconds: float,
        output: Path,
    ) -> ReplayedTrial:
        """Replay the trial ``recording`` by running its command again (``chronicle record
        --replay``, stopping at the first divergence), in the background as ``record`` runs
        it; the replay's result, or why it could not be replayed."""

        async def runner(argv: Sequence[str], cwd: Path, environ: Mapping[str, str]) -> int:
            return await run_in_background(argv, cwd, environ, output=output, seconds=seconds)

        try:
            outcome = await replay_command(
                self.store, self.settings, recording=recording, command=command,
                workspace=workspace, gateway_url=self.gateway_url, user=self.user, mode=mode,
                on_divergence="stop",
                check_gateway=lambda token: check_gateway(self.gateway_url, token),
                started=lambda session: None, owner_store=self.owner_store, config=config,
                environment=environment, run_command=runner,
            )  # fmt: skip
        except RecordError as exc:
            return ReplayedTrial(None, str(exc))
        return ReplayedTrial(outcome.result, None)


@dataclass(frozen=True)
class ReplayedTrial:
    """A trial's command replayed: the replay's result (None: it could not be, ``error``)."""

    result: ReplayResult | None
    error: str | None
