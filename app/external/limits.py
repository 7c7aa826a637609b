"""Limits on an external agent's gateway calls: the decision, as pure code.

A call is checked against two scopes, its user's and its session's, each with up to four
limits (``app.config.GatewayLimits``): a cost cap (USD), a call cap, the models that may
answer, and a rate (calls per minute). Both scopes must admit it, so a session's own limits
can only tighten its user's, never loosen them; and a scope's limits may come in layers (a
session's own and the deployment's defaults for sessions), all of which hold at once
(``tightest``).

What a scope has used is its ``Usage`` row (``app.external.sql.gateway_limits``), read locked, then
``decide`` says whether the call may go and what the row becomes: the call counted (reserved
before any upstream request, so concurrent calls never pass the call cap) and one token taken
from the rate's bucket. The cost is known only when the call is over, so it is added then; a
cost cap refuses once the recorded cost has reached it, and the calls in flight at that moment
may go past it by their own cost.

The rate is a token bucket: ``rate_per_minute`` tokens at most, refilled continuously at that
rate; a call takes one. Refused, the agent is told when one will be there (``retry_after``).
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pydantic import ValidationError

from app.config import GatewayLimits
from app.events.session_config import SessionConfig
from app.external.errors import GatewayError
from app.external.sql.gateway_limits import Usage

Scope = Literal["user", "session"]
Limit = Literal["max_cost_usd", "max_calls", "models", "rate_per_minute"]

#: The header a gateway-opened session's own limits are given in (read when it is opened).
LIMITS_HEADER = "x-chronicle-limits"
#: ``session.created``'s ``config`` key of a session's own limits.
CONFIG_KEY = SessionConfig.stored_key("limits")
#: The header that tells the official OpenAI and Anthropic SDKs not to retry (their
#: ``_should_retry`` obeys it before looking at the status).
NO_RETRY = {"x-should-retry": "false"}


@dataclass(frozen=True)
class Refusal:
    """Why a call may not go: which scope's limit, its value, and (for the rate) when to
    try again."""

    scope: Scope
    limit: Limit
    message: str
    retry_after: float | None = None

    def error(self) -> GatewayError:
        """The refusal as the agent gets it (see docs/gateway.md, "Limits"): the rate is
        "retry later" (429 with Retry-After, which the SDKs wait for); a spent cap is "do
        not retry" (429 ``insufficient_quota``, OpenAI's own for a spent quota, with
        ``x-should-retry: false``); a model the limits do not allow is 403."""
        if self.limit == "rate_per_minute":
            wait = max(1, math.ceil(self.retry_after or 0))
            headers = {
                "Retry-After": str(wait),
                "retry-after-ms": str(max(1, math.ceil((self.retry_after or 0) * 1000))),
            }
            return GatewayError(
                429, "rate_limited", self.message, code="rate_limit_exceeded", headers=headers
            )
        if self.limit == "models":
            return GatewayError(
                403, "permission", self.message, code="model_not_allowed", headers=dict(NO_RETRY)
            )
        return GatewayError(
            429, "rate_limited", self.message, code="insufficient_quota", headers=dict(NO_RETRY)
        )


def tightest(layers: Sequence[GatewayLimits]) -> GatewayLimits:
    """Several limits at once: the lowest cap and rate; the models of every layer that names
    some (``models_allowed`` asks each: a model must match a pattern of each layer)."""

    def lowest(values: list[float | None]) -> float | None:
        known = [value for value in values if value is not None]
        return min(known) if known else None

    calls = lowest([layer.max_calls for layer in layers])
    named = [layer.models for layer in layers if layer.models is not None]
    return GatewayLimits(
        max_cost_usd=lowest([layer.max_cost_usd for layer in layers]),
        max_calls=None if calls is None else int(calls),
        models=named[0] if len(named) == 1 else None,
        rate_per_minute=lowest([layer.rate_per_minute for layer in layers]),
    )


def empty(limits: GatewayLimits) -> bool:
    return (
        limits.max_cost_usd is None
        and limits.max_calls is None
        and limits.models is None
        and limits.rate_per_minute is None
    )


def model_allowed(patterns: tuple[str, ...], model: str) -> bool:
    """Whether the upstream ``model`` (a litellm name; also matched without its provider:
    ``gpt-4o*`` allows ``openai/gpt-4o-mini``) matches one of ``patterns``."""
    names = {model, model.rsplit("/", 1)[-1]}
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names)


def _money(value: float) -> str:
    return f"${value:.6g}"


def decide(
    scope: Scope, layers: Sequence[GatewayLimits], usage: Usage, model: str, now: float
) -> Refusal | Usage:
    """Whether a call of ``model`` (the upstream one) may go in this scope, whose limits are
    all of ``layers`` at once (``tightest``): the ``Refusal``, or the scope's usage with the
    call reserved (counted, a rate token taken)."""
    whose = "the user's" if scope == "user" else "the session's"
    for layer in layers:
        if layer.models is not None and not model_allowed(layer.models, model):
            allowed = ", ".join(layer.models) or "none"
            return Refusal(
                scope,
                "models",
                f"the model {model!r} is not allowed by {whose} limits (models: {allowed}); "
                "ask for an allowed one",
            )
    limits = tightest(layers)
    if limits.max_calls is not None and usage.calls >= limits.max_calls:
        return Refusal(
            scope,
            "max_calls",
            f"{whose} call cap is reached: {usage.calls} calls of max_calls "
            f"{limits.max_calls}; no more calls are made until an operator raises it",
        )
    if limits.max_cost_usd is not None and usage.cost_usd >= limits.max_cost_usd:
        return Refusal(
            scope,
            "max_cost_usd",
            f"{whose} cost cap is reached: {_money(usage.cost_usd)} spent of max_cost_usd "
            f"{_money(limits.max_cost_usd)}; no more calls are made until an operator raises it",
        )
    tokens, refilled_at = usage.tokens, usage.refilled_at
    if limits.rate_per_minute is not None:
        rate = limits.rate_per_minute
        per_second = rate / 60
        capacity = max(1.0, rate)  # a rate under one a minute still lets one call through
        held = capacity if tokens is None else tokens + max(0.0, now - refilled_at) * per_second
        held = min(held, capacity)
        if held < 1:
            return Refusal(
                scope,
                "rate_per_minute",
                f"{whose} rate limit is reached: rate_per_minute {rate:g}; retry after "
                f"{math.ceil((1 - held) / per_second)} s",
                retry_after=(1 - held) / per_second,
            )
        tokens, refilled_at = held - 1, now
    return replace(usage, calls=usage.calls + 1, tokens=tokens, refilled_at=refilled_at)


def decide_all(
    checks: Sequence[tuple[Scope, Sequence[GatewayLimits], Usage]], model: str, now: float
) -> Refusal | list[Usage]:
    """Every scope's decision, in order: the first refusal, else each scope's usage with
    the call reserved."""
    reserved: list[Usage] = []
    for scope, layers, usage in checks:
        decided = decide(scope, layers, usage, model, now)
        if isinstance(decided, Refusal):
            return decided
        reserved.append(decided)
    return reserved


#: The words each refusal's message holds (``decide``), by which a recorded one is told.
_RECORDED_WORDS: tuple[tuple[str, Limit], ...] = (
    ("rate limit is reached", "rate_per_minute"),
    ("call cap is reached", "max_calls"),
    ("cost cap is reached", "max_cost_usd"),
    ("limits (models:", "models"),
)


def recorded_refusal(error: str) -> GatewayError:
    """The refusal a recorded ``llm.call`` (``error_kind`` ``refused``, its ``error`` this
    message) was answered with, to answer a replay of it the same way (a rate refusal says
    retry after 1 s: the wait is not part of what is replayed)."""
    scope: Scope = "user" if "the user's" in error else "session"
    for words, limit in _RECORDED_WORDS:
        if words in error:
            return Refusal(scope, limit, error, retry_after=1.0).error()
    return Refusal(scope, "max_calls", error).error()


_PAIR = re.compile(r"\s*([a-z_]+)\s*=\s*([^,;]*)")
_HEADER_NAMES = {
    "max_cost": "max_cost_usd",
    "max_cost_usd": "max_cost_usd",
    "max_calls": "max_calls",
    "models": "models",
    "rate": "rate_per_minute",
    "rate_per_minute": "rate_per_minute",
}


def parse_limits(text: str) -> GatewayLimits:
    """``max_cost=5; max_calls=100; models=gpt-4o* claude-*; rate=60`` (the
    ``X-Chronicle-Limits`` header): ``ValueError`` saying what is wrong."""
    values: dict[str, object] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        found = _PAIR.fullmatch(part)
        if not found or found.group(1) not in _HEADER_NAMES:
            raise ValueError(
                f"{part.strip()!r} is not a limit: give name=value pairs separated by ';' "
                "(max_cost, max_calls, models, rate)"
            )
        name, value = _HEADER_NAMES[found.group(1)], found.group(2).strip()
        values[name] = tuple(value.replace(",", " ").split()) if name == "models" else value
    try:
        return GatewayLimits.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors()
        )
        raise ValueError(f"the limits are not valid: {problems}") from None


def session_limits(config: SessionConfig | None) -> GatewayLimits:
    """A session's own limits, from its ``session.created`` ``config`` (none: no limits)."""
    found = config.limits if config is not None else None
    if found is None:
        return GatewayLimits()
    try:
        return GatewayLimits.model_validate(found)
    except ValidationError:  # recorded by hand, wrongly: allow nothing rather than anything
        return GatewayLimits(max_calls=0)
