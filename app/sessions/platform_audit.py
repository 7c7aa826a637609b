"""Recording the platform's own actions in its audit log: one function per action.

The access service and the ``chronicle`` command call these after the action succeeded
(a token made, a login, a user changed, an admin's read of someone's session), with the
``Actor`` who did it: a user through the API (with the client's address), or the login
that ran the command on the host. A record that cannot be written raises, as any failed
write does, so an action is never silently left out of the log.

Nothing secret is handed to them: tokens are named by id; there are no passwords.
"""

from __future__ import annotations

import getpass
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal
from uuid import UUID

from app.events.platform_audit import (
    AuditEvent,
    AuditLogin,
    AuditLogout,
    AuditSessionRead,
    AuditSessionStarted,
    AuditTokenCreated,
    AuditTokenRevoked,
    AuditUserChanged,
    Via,
)
from app.sessions.sql.platform_audit import append_audit, session_owner
from app.sessions.sql.users import Principal, TokenInfo
from app.store import EventStore, RecordedEvent

STARTED_KINDS: dict[str, Literal["audit.fork_started", "audit.replay_started"]] = {
    "fork": "audit.fork_started",
    "replay": "audit.replay_started",
}
#: How long an admin's read of one session is recorded once (per credential, per process).
READ_WINDOW_SECONDS = 3600.0
#: How many (credential, session) pairs a process remembers; the oldest are forgotten first.
READ_MEMORY = 4096


@dataclass(frozen=True)
class Actor:
    """Who did it: a user's name (``api``) or ``cli:<login>`` (``cli``), and from where."""

    name: str
    via: Via
    address: str | None = None

    def fields(self) -> dict[str, str | None]:
        return {"actor": self.name, "via": self.via, "address": self.address}


def terminal_actor() -> Actor:
    """The login that runs this ``chronicle`` command on the host."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's)
        login = "unknown"
    return Actor(name=f"cli:{login}", via="cli")


def api_actor(principal: Principal, address: str | None) -> Actor:
    return Actor(name=principal.name, via="api", address=address)


async def _record(store: EventStore, event: AuditEvent) -> RecordedEvent:
    return await append_audit(store, event)


async def token_created(store: EventStore, actor: Actor, token: TokenInfo) -> RecordedEvent:
    return await _record(
        store,
        AuditTokenCreated(
            **actor.fields(),
            token_id=token.id,
            owner=token.user_name,
            label=token.label,
            expires_at=token.expires_at,
        ),
    )


async def token_revoked(
    store: EventStore, actor: Actor, token_id: UUID, owner: str | None
) -> RecordedEvent:
    return await _record(store, AuditTokenRevoked(**actor.fields(), token_id=token_id, owner=owner))


async def logged_in(
    store: EventStore,
    actor: Actor,
    login_id: UUID,
    *,
    token_id: UUID | None,
    expires_at: datetime | None,
) -> RecordedEvent:
    return await _record(
        store,
        AuditLogin(**actor.fields(), login_id=login_id, token_id=token_id, expires_at=expires_at),
    )


async def logged_out(store: EventStore, actor: Actor, login_id: UUID) -> RecordedEvent:
    return await _record(store, AuditLogout(**actor.fields(), login_id=login_id))


async def user_changed(
    store: EventStore, actor: Actor, name: str, change: str, *, is_admin: bool | None = None
) -> RecordedEvent:
    return await _record(
        store, AuditUserChanged(**actor.fields(), name=name, change=change, is_admin=is_admin)
    )


async def session_started(
    store: EventStore,
    actor: Actor,
    started: Literal["fork", "replay"],
    *,
    session_id: UUID,
    source_session: UUID,
    principal: Principal,
) -> RecordedEvent | None:
    """A fork or replay of ``source_session``, recorded when its source is another user's."""
    owner = await session_owner(store, source_session)
    if owner is None or owner[0] == principal.user_id:
        return None
    return await _record(
        store,
        AuditSessionStarted(
            **actor.fields(),
            kind=STARTED_KINDS[started],
            session_id=session_id,
            source_session=source_session,
            owner=owner[1],
        ),
    )


@dataclass
class AdminReads:
    """An admin's reads of other users' sessions, each recorded once an hour.

    Every route that names a session passes through ``ensure_visible``; an admin's dozens of
    requests while looking at one session (events, the stream, model calls) are one read.
    The rule: one ``audit.session_read`` per admin credential (an API token, or one browser
    login) and session per ``READ_WINDOW_SECONDS``, per API process. A session the admin
    owns, or that no API user owns (started on the host), is nobody else's: no record, and
    no owner lookup again within the window either.
    """

    window: float = READ_WINDOW_SECONDS
    memory: int = READ_MEMORY
    _seen: OrderedDict[tuple[UUID, UUID], float] = field(default_factory=OrderedDict)

    async def read(
        self,
        store: EventStore,
        principal: Principal,
        session_id: UUID,
        address: str | None,
    ) -> RecordedEvent | None:
        key = (principal.token_id, session_id)
        now = time.monotonic()
        seen = self._seen.get(key)
        if seen is not None and now - seen < self.window:
            return None
        self._remember(key, now)  # before awaiting: requests at once record it once
        try:
            owner = await session_owner(store, session_id)
            if owner is None or owner[0] == principal.user_id:
                return None
            return await _record(
                store,
                AuditSessionRead(
                    **api_actor(principal, address).fields(),
                    session_id=session_id,
                    owner=owner[1],
                    token_id=principal.token_id,
                ),
            )
        except BaseException:
            self._seen.pop(key, None)  # not recorded: the next request tries again
            raise

    def _remember(self, key: tuple[UUID, UUID], now: float) -> None:
        self._seen[key] = now
        self._seen.move_to_end(key)
        while len(self._seen) > self.memory:
            self._seen.popitem(last=False)
