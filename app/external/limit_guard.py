"""The gateway's limits applied to each call, before any upstream request.

``LimitGuard.admit(session_id, gateway, request)`` finds the call's limits (the session's
own, from its ``session.created``; its owner's, set by an admin, else the deployment's
default; the deployment's default for sessions), and when there are any, reserves the call
in the database (``app.external.sql.gateway_limits.reserve``, decided by ``limits.decide_all``). A
refused call is recorded in the session as an ``llm.call`` with ``error_kind`` ``refused``,
cost 0, no attempt (its prompt stored as any call's, so an auditor sees what was refused and
a replay can fingerprint it), and raises the ``GatewayError`` the agent is answered with.
An admitted call's recorded cost is added to its scopes when it is over (``Admission.spent``).

A session's owner and own limits never change, so they are kept per process; a user's
limits are read on each call, so an admin's change holds from the next call on.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from app.config import GatewayLimitDefaults, GatewayLimits
from app.events import LlmCall
from app.events.llm import REFUSED
from app.events.session_config import SessionConfig
from app.external import limits
from app.external.errors import GatewayError
from app.external.sql.gateway_limits import Key, Usage, UserLimits, add_cost, reserve, user_limits
from app.llm import LlmGateway
from app.sessions.sql.session_owners import owner_of
from app.store import EventStore

#: Sessions whose owner and own limits are kept, per process (bounded).
KNOWN_LIMIT = 10_000


@dataclass(frozen=True)
class Admission:
    """An admitted call: the scopes it was counted in."""

    store: EventStore
    keys: tuple[Key, ...] = field(default=())

    async def spent(self, cost_usd: float | None) -> None:
        """The call is over: its recorded cost counts against its scopes' cost caps."""
        if self.keys and cost_usd:
            await add_cost(self.store, self.keys, cost_usd)


def user_layer(own: UserLimits | None, default: GatewayLimits) -> GatewayLimits:
    """A user's limits: each the admin's value for the user, else the deployment's."""
    if own is None:
        return default
    return GatewayLimits(
        max_cost_usd=own.max_cost_usd if own.max_cost_usd is not None else default.max_cost_usd,
        max_calls=own.max_calls if own.max_calls is not None else default.max_calls,
        models=own.models if own.models is not None else default.models,
        rate_per_minute=(
            own.rate_per_minute if own.rate_per_minute is not None else default.rate_per_minute
        ),
    )


class LimitGuard:
    """One process's check of every gateway call against its limits."""

    def __init__(self, store: EventStore, defaults: GatewayLimitDefaults) -> None:
        self.store = store
        self.defaults = defaults
        self._sessions: OrderedDict[UUID, tuple[UUID | None, GatewayLimits]] = OrderedDict()

    async def _session(self, session_id: UUID) -> tuple[UUID | None, GatewayLimits]:
        """The session's owner and its own limits (kept: neither ever changes)."""
        known = self._sessions.get(session_id)
        if known is None:
            owner = await owner_of(self.store, session_id)
            first = await self.store.read(session_id, 0, 1)
            known = (owner, limits.session_limits(SessionConfig.read(first)))
            self._sessions[session_id] = known
            if len(self._sessions) > KNOWN_LIMIT:
                self._sessions.popitem(last=False)
        return known

    async def admit(
        self,
        session_id: UUID,
        gateway: LlmGateway,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        params: dict[str, Any],
        *,
        stream: bool,
    ) -> Admission:
        """Reserve the call, or record its refusal and raise the ``GatewayError``."""
        owner, own = await self._session(session_id)
        checks: list[tuple[Key, limits.Scope, Sequence[GatewayLimits]]] = []
        session_layers = [
            layer for layer in (self.defaults.session, own) if not limits.empty(layer)
        ]
        if session_layers:
            checks.append((("session", session_id), "session", session_layers))
        if owner is not None:
            user = user_layer(await user_limits(self.store, owner), self.defaults.user)
            if not limits.empty(user):
                checks.append((("user", owner), "user", [user]))
        if not checks:
            return Admission(self.store)
        model = gateway.config.model
        refused: list[limits.Refusal] = []

        def decide(usage: list[Usage], now: float) -> list[Usage] | None:
            decided = limits.decide_all(
                [
                    (scope, layers, used)
                    for (_, scope, layers), used in zip(checks, usage, strict=True)
                ],
                model,
                now,
            )
            if isinstance(decided, limits.Refusal):
                refused.append(decided)
                return None
            return decided

        keys = tuple(key for key, _, _ in checks)
        if await reserve(self.store, keys, decide):
            return Admission(self.store, keys)
        error = refused[0].error()
        await record_refusal(
            self.store, gateway, session_id, messages, tools, params, stream, error
        )
        raise error


async def record_refusal(
    store: EventStore,
    gateway: LlmGateway,
    session_id: UUID,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    params: dict[str, Any],
    stream: bool,
    error: GatewayError,
) -> None:
    """The refused call in the session's log: its request as any call's is recorded, no
    response, no attempt, cost 0, ``error_kind`` ``refused``."""
    await gateway.load_client()  # its tool-calling mode may need litellm's model map
    request = gateway.prepare(messages, tools, params=params)
    await gateway.store_prompt(request)
    recorded_params: dict[str, Any] = {**request.params, "base_url": gateway.config.base_url}
    if stream:
        recorded_params["stream"] = True
    call = LlmCall(
        model=gateway.config.model,
        params=recorded_params,
        fingerprint=request.fingerprint,
        prompt=request.recorded_prompt(),
        prompt_kept=request.kept,
        tools=request.tools_hash,
        tool_calling="native" if gateway.native_tool_calling() else "prompt",
        latency_ms=0.0,
        attempts=0,
        cost_usd=0.0,
        error=error.message,
        error_kind=REFUSED,
    )
    await store.append(session_id, [call])
