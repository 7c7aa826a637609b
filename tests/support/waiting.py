"""Waiting in a test for something to happen, always with a deadline.

What can be awaited is awaited: an event in the log through the store's own subscription
(``wait_for_events``), a child process's end through its pidfd (``exited``, ``before_exit``),
the fake model's requests through its ``wait_until``. ``until`` polls, and is only for what
sends no notification: a file another process writes, a counter inside a component.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

if TYPE_CHECKING:  # the jail's attacks import this in a script of their own, without a store
    from app.store import EventStore, RecordedEvent

T = TypeVar("T")

#: Seconds between two looks at a condition that sends no notification.
POLL_INTERVAL = 0.05


async def wait_for_events(
    store: EventStore,
    session: UUID,
    count: int,
    matching: Callable[[RecordedEvent], bool] = lambda event: True,
    *,
    after_seq: int = 0,
    timeout: float = 60,
) -> list[RecordedEvent]:
    """The session's first ``count`` events ``matching`` after ``after_seq``, as soon as they
    are in the log; fails after ``timeout`` seconds naming how many came."""
    found: list[RecordedEvent] = []
    if count <= 0:
        return found
    stream = store.subscribe(session, after_seq)
    try:
        async with asyncio.timeout(timeout):
            async for event in stream:
                if matching(event):
                    found.append(event)
                    if len(found) == count:
                        return found
    except TimeoutError:
        raise AssertionError(
            f"{len(found)} of {count} awaited events in session {session} after {timeout} s: "
            f"{[(e.seq, e.kind) for e in found]}"
        ) from None
    finally:
        await stream.aclose()
    raise AssertionError("a subscription ended")  # it never does while open


async def wait_for_event(
    store: EventStore,
    session: UUID,
    matching: Callable[[RecordedEvent], bool],
    *,
    after_seq: int = 0,
    timeout: float = 60,
) -> RecordedEvent:
    """The session's first event ``matching`` after ``after_seq``, once it is in the log."""
    [event] = await wait_for_events(
        store, session, 1, matching, after_seq=after_seq, timeout=timeout
    )
    return event


async def _pidfd_readable(pidfd: int) -> None:
    loop = asyncio.get_running_loop()
    readable: asyncio.Future[None] = loop.create_future()

    def ended() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(pidfd, ended)
    try:
        await readable
    finally:
        loop.remove_reader(pidfd)


async def exited(process: subprocess.Popen[Any]) -> int:
    """The exit status of a child process, awaited on its pidfd (readable once it ends)."""
    if process.returncode is not None:
        return process.returncode
    pidfd = os.pidfd_open(process.pid)
    try:
        if process.poll() is None:
            await _pidfd_readable(pidfd)
        return process.wait()
    finally:
        os.close(pidfd)


async def pid_ended(pid: int, *, timeout: float, what: str) -> None:
    """Return once the process ``pid`` (any process, not only a child) has ended; fails after
    ``timeout`` seconds saying ``what`` outlived it."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        async with asyncio.timeout(timeout):
            await _pidfd_readable(pidfd)
    except TimeoutError:
        raise AssertionError(f"{what} still runs after {timeout} s") from None
    finally:
        os.close(pidfd)


async def before_exit(
    awaitable: Awaitable[T], process: subprocess.Popen[Any], *, timeout: float, what: str
) -> T:
    """The result of ``awaitable``; fails at once with the process's output if it ends first,
    or after ``timeout`` seconds saying ``what`` was awaited."""
    waited = asyncio.ensure_future(awaitable)
    ended = asyncio.ensure_future(exited(process))
    try:
        done, _ = await asyncio.wait(
            {waited, ended}, timeout=timeout, return_when="FIRST_COMPLETED"
        )
        if waited in done:
            return waited.result()
        if ended in done:
            out, err = process.communicate()
            raise AssertionError(f"exited {process.returncode} before {what}:\n{out}\n{err}")
        raise AssertionError(f"{what}: not within {timeout} s")
    finally:
        for task in (waited, ended):
            task.cancel()
        await asyncio.gather(waited, ended, return_exceptions=True)


async def until(
    condition: Callable[[], bool | Awaitable[bool]],
    *,
    timeout: float,
    what: str,
    process: subprocess.Popen[Any] | None = None,
    interval: float = POLL_INTERVAL,
) -> None:
    """Poll ``condition`` (a function, or a coroutine function) until it holds, for what
    sends no notification; fails after ``timeout`` seconds saying ``what`` did not happen.
    With ``process``, fails at once with its output when it ends first."""

    async def holds() -> bool:
        result = condition()
        return bool(await result) if inspect.isawaitable(result) else bool(result)

    try:
        async with asyncio.timeout(timeout):
            while not await holds():
                if process is not None and process.poll() is not None:
                    out, err = process.communicate()
                    raise AssertionError(
                        f"exited {process.returncode} before {what}:\n{out}\n{err}"
                    )
                await asyncio.sleep(interval)
    except TimeoutError:
        raise AssertionError(f"{what}: not within {timeout} s") from None
