"""Which session a gateway call is recorded in, and the ``session.created`` of one it opens.

In order:

0. a token scoped to one session (its label ``session:<id>``, below): that session;
1. the ``X-Chronicle-Session`` header: the UUID of an external session the token's user owns,
   or a name: the user's session of that name,
   opened on its first call. A name always means the same session of the same user: its id is
   derived from the user and the name (``named_session_id``), so two calls racing to open it
   open it once, and nothing maps names to ids but this function;
2. else the token's own session: every call made with one token and no header goes to one
   session, opened on its first call (``token_session_id``).

A session the gateway opens records ``session.created`` with ``config.agent = "external"``
and the client's name from its User-Agent (``external_session``); ``chronicle record``
records its own with the same function. Only sessions whose ``session.created`` says
``external`` take gateway calls: the calls of Chronicle's own agent are never interleaved
with an outside agent's.

A token whose label is ``session:<id>`` (``chronicle record`` mints one per run, and
revokes it when the command ends) is scoped to that session: its calls go there, and one
naming another session is refused (403); see ``app.external.session_scope``.
"""

from __future__ import annotations

import re
import uuid
from collections import OrderedDict
from typing import Any
from uuid import UUID

from app.config import GatewayLimits
from app.events import SessionCreated
from app.events.session_config import SessionConfig
from app.external.errors import GatewayError
from app.external.limits import CONFIG_KEY, LIMITS_HEADER, parse_limits, session_limits
from app.external.session_scope import scoped_session
from app.sessions.sql.session_owners import own_session, owner_of
from app.sessions.sql.users import Principal
from app.store import ConcurrencyError, EventStore

#: The header an agent (or its launcher) names its session with.
SESSION_HEADER = "x-chronicle-session"
#: ``session.created``'s ``config.agent`` of a session of calls from an agent we do not run.
EXTERNAL_AGENT = "external"
#: Namespace of the ids of named and per-token sessions (uuid5).
SESSION_NAMESPACE = UUID("5b0f7d2e-8a51-4c1e-9b7a-24e7c0de0024")
MAX_NAME = 200
_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")
#: Sessions known to take this user's calls, kept per process (bounded).
KNOWN_LIMIT = 10_000


def named_session_id(user_id: UUID, name: str) -> UUID:
    """The id of ``user_id``'s session called ``name``."""
    return uuid.uuid5(SESSION_NAMESPACE, f"name\n{user_id}\n{name}")


def token_session_id(token_id: UUID) -> UUID:
    """The id of the session a token's calls go to when they name none."""
    return uuid.uuid5(SESSION_NAMESPACE, f"token\n{token_id}")


def client_name(user_agent: str | None) -> str:
    """The client's name from its User-Agent: its first product (``OpenAI/Python``)."""
    if not user_agent or not user_agent.strip():
        return "unknown"
    first = user_agent.strip().split()[0]
    return first[:100]


def external_session(
    *, title: str, user: str, user_agent: str | None, extra: dict[str, Any] | None = None
) -> SessionCreated:
    """The ``session.created`` of a session of an external agent's calls."""
    config: dict[str, Any] = {
        "agent": EXTERNAL_AGENT,
        "client": client_name(user_agent),
        "user_agent": (user_agent or "")[:500],
        **(extra or {}),
    }
    return SessionCreated(title=title, config=config, user=user)


class SessionChooser:
    """Finds (or opens) the session of each call; remembers the ones it checked."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._known: OrderedDict[tuple[UUID, UUID], None] = OrderedDict()
        #: the limits sessions were opened with (``_same_limits``; they never change)
        self._limits: OrderedDict[UUID, GatewayLimits] = OrderedDict()

    async def session_for(
        self,
        principal: Principal,
        header: str | None,
        user_agent: str | None,
        limits: str | None = None,
    ) -> UUID:
        """The session a call with this token and ``X-Chronicle-Session`` value goes to;
        ``limits`` (``X-Chronicle-Limits``) are recorded as the session's own when the call
        opens it (``app.external.limits``), and must be those afterwards (409 otherwise: a
        session's limits never change, and a header that seemed to change them would
        mislead)."""
        own = opening_limits(limits)
        session_id = await self._chosen(principal, header, user_agent, own)
        if own:
            await self._same_limits(session_id, own[CONFIG_KEY])
        return session_id

    async def _same_limits(self, session_id: UUID, given: dict[str, Any]) -> None:
        recorded = self._limits.get(session_id)
        if recorded is None:
            first = await self.store.read(session_id, 0, 1)
            recorded = self._limits[session_id] = session_limits(SessionConfig.read(first))
            if len(self._limits) > KNOWN_LIMIT:
                self._limits.popitem(last=False)
        if recorded != session_limits(SessionConfig(limits=given)):
            shown = recorded.model_dump(exclude_none=True, mode="json") or "none"
            raise GatewayError(
                409,
                "invalid_request",
                f"session {session_id} was opened with the limits {shown}; a session's limits "
                f"are set when it is opened: send the same {LIMITS_HEADER} header, or none",
            )

    async def _chosen(
        self, principal: Principal, header: str | None, user_agent: str | None, own: dict[str, Any]
    ) -> UUID:
        scoped = scoped_session(principal.label)
        if scoped is not None:  # a token made for one session (app.external.session_scope)
            if header is not None and header.strip():
                if _header_session(principal, header.strip()) != scoped:
                    raise GatewayError(
                        403,
                        "permission",
                        f"this token is for session {scoped} only; send no {SESSION_HEADER} "
                        "header, or that session's id",
                    )
            await self._existing(principal, scoped)
            return scoped
        if header is not None and header.strip():
            chosen = header.strip()
            try:
                session_id = UUID(chosen)
            except ValueError:
                return await self._named(principal, chosen, user_agent, own)
            await self._existing(principal, session_id)
            return session_id
        session_id = token_session_id(principal.token_id)
        title = f"calls of token {str(principal.token_id)[:8]}"
        await self._opened(principal, session_id, title, user_agent, own)
        return session_id

    async def _named(
        self, principal: Principal, name: str, user_agent: str | None, own: dict[str, Any]
    ) -> UUID:
        if not _NAME.match(name):
            raise GatewayError(
                400,
                "invalid_request",
                f"the {SESSION_HEADER} header must be a session's UUID or a name of 1 to "
                f"{MAX_NAME} characters without control characters",
            )
        session_id = named_session_id(principal.user_id, name)
        await self._opened(principal, session_id, name, user_agent, own)
        return session_id

    def _remember(self, principal: Principal, session_id: UUID) -> None:
        self._known[principal.user_id, session_id] = None
        if len(self._known) > KNOWN_LIMIT:
            self._known.popitem(last=False)

    async def _opened(
        self,
        principal: Principal,
        session_id: UUID,
        title: str,
        user_agent: str | None,
        own: dict[str, Any] | None = None,
    ) -> None:
        """Open the session (owner, then ``session.created``) unless it is open already."""
        if (principal.user_id, session_id) in self._known:
            return
        owner = await own_session(self.store, session_id, principal.user_id)
        if owner != principal.user_id:  # only a uuid5 collision could get here
            raise _not_yours(session_id)
        if await self.store.last_seq(session_id) == 0:
            created = external_session(
                title=title, user=principal.name, user_agent=user_agent, extra=own
            )
            try:
                await self.store.append(session_id, [created], expected_seq=0)
            except ConcurrencyError:
                pass  # another call opened it first
        await self._check_external(session_id)
        self._remember(principal, session_id)

    async def _existing(self, principal: Principal, session_id: UUID) -> None:
        """A session named by its UUID: the user's own, and an external one."""
        if (principal.user_id, session_id) in self._known:
            return
        if await owner_of(self.store, session_id) != principal.user_id:
            raise _not_yours(session_id)
        await self._check_external(session_id)
        self._remember(principal, session_id)

    async def _check_external(self, session_id: UUID) -> None:
        first = await self.store.read(session_id, 0, 1)
        config = SessionConfig.read(first)
        if config is None or config.agent != EXTERNAL_AGENT:
            raise GatewayError(
                409,
                "invalid_request",
                f"session {session_id} is not a session of an external agent (its "
                "session.created does not say agent 'external'); name another, or a new name",
            )


def opening_limits(header: str | None) -> dict[str, Any]:
    """``session.created``'s ``config`` of a session opened with these ``X-Chronicle-Limits``
    (nothing for none); ``GatewayError`` 400 for a header that is not limits."""
    if header is None or not header.strip():
        return {}
    try:
        limits = parse_limits(header)
    except ValueError as exc:
        raise GatewayError(400, "invalid_request", f"{LIMITS_HEADER}: {exc}") from None
    return {CONFIG_KEY: limits.model_dump(exclude_none=True, mode="json")}


def _header_session(principal: Principal, chosen: str) -> UUID:
    """The session an ``X-Chronicle-Session`` value names: its UUID, or the user's name."""
    try:
        return UUID(chosen)
    except ValueError:
        return named_session_id(principal.user_id, chosen)


def _not_yours(session_id: UUID) -> GatewayError:
    return GatewayError(
        404, "not_found", f"no session {session_id} (or it is not yours)", code="session_not_found"
    )
