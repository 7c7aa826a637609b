"""``chronicle record``: run any agent's command with its model calls going through the
gateway, and record around it what the gateway cannot see.

The gateway records each model call as an ``llm.call`` of the session the command's token is
scoped to. Around the command this records, as ``chronicle run`` does for Chronicle's own
agent: ``session.created`` (agent ``external``, the command line, the workspace), the
workspace's ``workspace.snapshot`` at the start and its ``workspace.diff`` at the end, and an
``agent.state`` ``running`` then ``finished`` / ``error`` / ``stopped`` with the command's
exit code and wall time. The session is claimed while the command runs, so the page shows it
running (and interrupted if this process dies).

The command gets a token of its own: minted for the user, scoped to the session, revoked
when the command ends (and expiring after ``TOKEN_LIFETIME`` if this process cannot revoke
it). It reaches the agent through the variables the OpenAI and Anthropic SDKs read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from app.config import Settings
from app.events import AgentState
from app.events.session_config import SessionConfig
from app.external.agent_command import (
    RecordError,
    exit_code_of,
    run_forwarding_signals,
    signal_name,
)
from app.external.limits import CONFIG_KEY as LIMITS_KEY
from app.external.session_scope import scope_label
from app.external.sessions import (
    EXTERNAL_AGENT,
    MAX_NAME,
    external_session,
    named_session_id,
)
from app.sessions import platform_audit
from app.sessions.sql.session_owners import own_session, owner_of
from app.sessions.sql.users import TokenInfo, create_token, find_user, revoke_token
from app.sessions.summary import one_line_title
from app.sessions.workspace import record_workspace_end, record_workspace_start
from app.store import ConcurrencyError, EventStore, SessionBusyError, claim_session

#: How long a command's token lives if this process cannot revoke it when the command ends.
TOKEN_LIFETIME = timedelta(hours=24)


def gateway_environment(
    environ: Mapping[str, str], gateway_url: str, token: str, session_id: UUID
) -> dict[str, str]:
    """The command's environment: the caller's, with every variable by which the OpenAI and
    Anthropic SDKs (and litellm, as aider uses it) find their server and key pointing at
    the gateway with the session's token. ``ANTHROPIC_AUTH_TOKEN`` is taken out: a client
    sends it as a Bearer token, and one left in the user's shell is a provider's credential
    that must not reach the gateway. ``CHRONICLE_SESSION`` names the session for the curious."""
    base = gateway_url.rstrip("/")
    kept = {name: value for name, value in environ.items() if name not in DROPPED}
    return {
        **kept,
        "OPENAI_BASE_URL": f"{base}/v1",
        "OPENAI_API_BASE": f"{base}/v1",
        "OPENAI_API_KEY": token,
        "ANTHROPIC_BASE_URL": base,
        "ANTHROPIC_API_KEY": token,
        "CHRONICLE_SESSION": str(session_id),
    }


#: Credentials of the user's shell the command must not send the gateway.
DROPPED = frozenset({"ANTHROPIC_AUTH_TOKEN"})


def ending(returncode: int, wall_seconds: float) -> AgentState:
    """The ``agent.state`` that ends a recorded run: ``finished`` on exit 0, ``stopped`` when
    a signal ended the command, ``error`` otherwise; the exit code and wall time as fields
    (for SQL and scoring) and in words (for the page)."""
    seconds = round(wall_seconds, 3)
    code = exit_code_of(returncode)
    if returncode < 0:
        name = signal_name(-returncode)
        state, reason = "stopped", f"the command was ended by {name} after {seconds:g} s"
    elif returncode == 0:
        state, reason = "finished", f"the command exited with code 0 after {seconds:g} s"
    else:
        state, reason = "error", f"the command exited with code {code} after {seconds:g} s"
    return AgentState(
        state=state, reason=reason, exit_code=code, wall_seconds=seconds, source="agent"
    )


def session_config(command: Sequence[str], workspace: Path) -> dict[str, Any]:
    """What ``session.created`` records of a recorded command's session, besides what the
    gateway records of any external session (``external_session``)."""
    return {
        "client": "chronicle record",
        "command": list(command),
        "workspace": str(workspace),
        "runtime": "host",
    }


def starting(command: Sequence[str]) -> AgentState:
    """The ``agent.state`` a recorded run starts with: the page shows the session working."""
    return AgentState(state="running", reason=f"running {shlex.join(command)}", source="agent")


@dataclass(frozen=True)
class Recording:
    """What to record: the command, where it runs, whose it is, which session (None: a new
    one; a UUID: that external session of the user's; a name: the user's session of that
    name, the one an ``X-Chronicle-Session`` header of that name names)."""

    command: list[str]
    workspace: Path
    gateway_url: str
    user: str
    session: str | None = None
    #: more of a new session's ``session.created`` config (an evaluation trial's run and task)
    config: Mapping[str, Any] = field(default_factory=dict)
    #: variables the command gets besides the gateway's (an evaluation task's prompt)
    environment: Mapping[str, str] = field(default_factory=dict)
    #: how the command runs: in the foreground with signals passed on, unless an evaluation
    #: runs it (in the background, with a timeout)
    runner: Callable[[Sequence[str], Path, Mapping[str, str]], Awaitable[int]] = field(
        default=run_forwarding_signals
    )


@dataclass(frozen=True)
class Recorded:
    session_id: UUID
    exit_code: int
    wall_seconds: float
    #: the signal that ended the command (``SIGKILL``), when one did (``ending``: stopped)
    ended_by: str | None = None


async def record(
    store: EventStore,
    settings: Settings,
    recording: Recording,
    *,
    check_gateway: Callable[[str], Awaitable[None]],
    started: Callable[[UUID], None],
    owner_store: Callable[[], Awaitable[EventStore]] | None = None,
) -> Recorded:
    """Record ``recording.command`` as a run of its session; ``check_gateway(token)`` is
    awaited with the command's token before anything is recorded (it raises when the gateway
    would refuse the command), ``started(session_id)`` once the command starts.
    ``owner_store()`` opens the store through the database owner's login, the only one that
    may make an admin's token (migration 0014): for a user who is an admin."""
    user = await find_user(store, recording.user)
    if user is None or user.disabled_at is not None or user.removed_at is not None:
        raise RecordError(
            f"no active user named {recording.user!r}; give one of `chronicle users list` "
            "(--user NAME or CHRONICLE_USER), or add it: chronicle users add NAME"
        )
    session_id, new = await _target(store, user.id, recording.session)
    if not new and recording.config.get(LIMITS_KEY):
        raise RecordError(
            f"session {session_id} is open already: its limits were set when it was opened; "
            "record into a new session to give limits"
        )
    if user.is_admin and owner_store is not None:
        async with await owner_store() as owner:
            info, token = await _mint(owner, user.id, session_id)
    else:
        info, token = await _mint(store, user.id, session_id)
    this = asyncio.current_task()
    assert this is not None
    lost = asyncio.Event()

    def database_gone() -> None:  # the claim's connection died: stop the command
        lost.set()
        this.cancel()

    try:
        await check_gateway(token)
        async with claim_session(store, session_id, on_lost=database_gone):
            if new:
                await _open(store, session_id, user.id, user.name, recording)
            return await _record_claimed(store, settings, recording, session_id, token, started)
    except SessionBusyError:
        raise RecordError(
            f"session {session_id} is being recorded by another command; wait until it ends"
        ) from None
    except asyncio.CancelledError:
        if not lost.is_set():
            raise
        this.uncancel()
        raise RecordError(
            f"the database went away while session {session_id} was recorded; the command "
            "was stopped"
        ) from None
    finally:
        with contextlib.suppress(Exception):  # it expires anyway (TOKEN_LIFETIME)
            async with asyncio.timeout(10):
                if await revoke_token(store, info.id):
                    await platform_audit.token_revoked(
                        store, platform_audit.terminal_actor(), info.id, user.name
                    )


async def _target(store: EventStore, user_id: UUID, session: str | None) -> tuple[UUID, bool]:
    """The session to record into, and whether it is still to be opened."""
    if session is None:
        return uuid.uuid4(), True
    try:
        session_id = UUID(session)
    except ValueError:
        if not _SESSION_NAME.fullmatch(session):
            raise RecordError(
                f"{session!r} is not a session name: use 1 to {MAX_NAME} characters without "
                "control characters, or a session's UUID"
            ) from None
        session_id = named_session_id(user_id, session)
        if await store.last_seq(session_id) == 0:
            return session_id, True  # the name's first use
    if await owner_of(store, session_id) != user_id:
        raise RecordError(f"no session {session_id} of yours; name another, or a new name")
    if not await _external(store, session_id):
        raise RecordError(
            f"session {session_id} is a session of Chronicle's own agent; record into an "
            "external session (a new name, or none)"
        )
    return session_id, False


#: A session's name, as the gateway's ``X-Chronicle-Session`` header takes one.
_SESSION_NAME = re.compile(rf"[^\x00-\x1f\x7f]{{1,{MAX_NAME}}}")


async def _external(store: EventStore, session_id: UUID) -> bool:
    """Whether the session's ``session.created`` says agent ``external`` (only those take
    an outside agent's calls)."""
    first = await store.read(session_id, 0, 1)
    config = SessionConfig.read(first)
    return config is not None and config.agent == EXTERNAL_AGENT


async def _open(
    store: EventStore, session_id: UUID, user_id: UUID, user: str, recording: Recording
) -> None:
    """The new session: its owner, then its ``session.created`` (as the gateway opens one)."""
    if await own_session(store, session_id, user_id) != user_id:
        raise RecordError(f"session {session_id} is not yours")
    command = shlex.join(recording.command)
    created = external_session(
        title=recording.session or one_line_title(command),
        user=user,
        user_agent=None,
        extra=session_config(recording.command, recording.workspace) | dict(recording.config),
    )
    try:
        await store.append(session_id, [created], expected_seq=0)
    except ConcurrencyError:  # the gateway opened it first (a call naming it meanwhile)
        pass


async def _mint(store: EventStore, user_id: UUID, session_id: UUID) -> tuple[TokenInfo, str]:
    """The command's token: the user's, scoped to the session, short-lived; its making is in
    the platform's audit log as any token's is."""
    info, token = await create_token(
        store,
        user_id,
        label=scope_label(session_id),
        expires_at=datetime.now(UTC) + TOKEN_LIFETIME,
    )
    await platform_audit.token_created(store, platform_audit.terminal_actor(), info)
    return info, token


async def _record_claimed(
    store: EventStore,
    settings: Settings,
    recording: Recording,
    session_id: UUID,
    token: str,
    started: Callable[[UUID], None],
) -> Recorded:
    baseline = await record_workspace_start(store, session_id, recording.workspace, settings)
    reason = "interrupted"
    try:
        await store.append(session_id, [starting(recording.command)])
        environ = gateway_environment(
            {**os.environ, **recording.environment}, recording.gateway_url, token, session_id
        )
        begun = time.monotonic()
        started(session_id)
        try:
            returncode = await recording.runner(recording.command, recording.workspace, environ)
        except RecordError as exc:  # gone between the check and the start
            reason = "error"
            failed = AgentState(state="error", reason=str(exc), exit_code=exc.exit_code)
            await store.append(session_id, [failed])
            raise
        end = ending(returncode, time.monotonic() - begun)
        reason = end.state
        await store.append(session_id, [end])
        by = signal_name(-returncode) if returncode < 0 else None
        return Recorded(session_id, exit_code_of(returncode), end.wall_seconds or 0.0, by)
    finally:
        await record_workspace_end(store, session_id, baseline, settings, reason=reason)


async def check_server(url: str) -> None:
    """``RecordError`` unless a Chronicle server answers at ``url`` (before anything is
    recorded: this command starts no server)."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=CHECK_TIMEOUT) as client:
            answer = await client.get(f"{url.rstrip('/')}/health/live")
    except httpx.HTTPError as exc:
        raise RecordError(
            f"no Chronicle server answers at {url} ({type(exc).__name__}); start one with "
            "`chronicle serve`, or name it with --url or CHRONICLE_URL"
        ) from None
    if answer.status_code != 200:
        raise RecordError(
            f"{url} answered {answer.status_code} where a Chronicle server answers 200 "
            "(/health/live); name the server with --url or CHRONICLE_URL"
        )


async def check_gateway(url: str, token: str) -> None:
    """``RecordError`` unless the gateway at ``url`` takes the command's token: a server on
    another database than this command's knows no such token."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=CHECK_TIMEOUT) as client:
            answer = await client.get(
                f"{url.rstrip('/')}/v1/models", headers={"Authorization": f"Bearer {token}"}
            )
    except httpx.HTTPError as exc:
        raise RecordError(f"the Chronicle server at {url} stopped answering ({exc})") from None
    if answer.status_code == 401:
        raise RecordError(
            f"the Chronicle server at {url} does not know the token this command made: it "
            "uses another database; give this command the server's settings "
            "(CHRONICLE_DATABASE_URL, CHRONICLE_CONFIG)"
        )
    if answer.status_code == 404:
        raise RecordError(
            f"the Chronicle server at {url} has no model gateway (/v1/models); upgrade it"
        )
    if answer.status_code != 200:
        raise RecordError(
            f"the gateway at {url} answered {answer.status_code}: {answer.text[:200]}"
        )


#: Seconds to wait for the server's answer to a check.
CHECK_TIMEOUT = 10.0
