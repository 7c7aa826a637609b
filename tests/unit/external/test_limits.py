"""The gateway's limit decisions, as pure code: caps, models, the rate bucket, layers that
only tighten, the refusals' shapes and the X-Chronicle-Limits header."""

from __future__ import annotations

import pytest

from app.config import GatewayLimits
from app.events.session_config import SessionConfig
from app.external import openai_protocol
from app.external.limits import (
    Refusal,
    Scope,
    decide,
    decide_all,
    model_allowed,
    parse_limits,
    recorded_refusal,
    session_limits,
    tightest,
)
from app.external.sql.gateway_limits import Usage

MODEL = "openai/gpt-4o-mini"


def refused(decided: object) -> Refusal:
    assert isinstance(decided, Refusal), decided
    return decided


def test_the_call_cap_admits_exactly_max_calls_calls() -> None:
    limits = [GatewayLimits(max_calls=3)]
    usage = Usage()
    for _ in range(3):
        decided = decide("session", limits, usage, MODEL, 0.0)
        assert isinstance(decided, Usage)
        usage = decided
    assert usage.calls == 3
    refusal = refused(decide("session", limits, usage, MODEL, 0.0))
    assert refusal.limit == "max_calls"
    assert "max_calls 3" in refusal.message and "session's" in refusal.message


def test_the_cost_cap_refuses_once_the_recorded_cost_reached_it() -> None:
    limits = [GatewayLimits(max_cost_usd=0.5)]
    assert isinstance(decide("user", limits, Usage(cost_usd=0.49), MODEL, 0.0), Usage)
    refusal = refused(decide("user", limits, Usage(cost_usd=0.5), MODEL, 0.0))
    assert refusal.limit == "max_cost_usd"
    assert "max_cost_usd $0.5" in refusal.message and "user's" in refusal.message


def test_a_zero_cap_refuses_the_first_call() -> None:
    assert refused(decide("user", [GatewayLimits(max_calls=0)], Usage(), MODEL, 0.0))
    assert refused(decide("user", [GatewayLimits(max_cost_usd=0)], Usage(), MODEL, 0.0))


def test_models_match_the_upstream_name_with_or_without_its_provider() -> None:
    assert model_allowed(("gpt-4o*",), "openai/gpt-4o-mini")
    assert model_allowed(("openai/*",), "openai/gpt-4o-mini")
    assert not model_allowed(("claude-*",), "openai/gpt-4o-mini")
    assert not model_allowed((), "openai/gpt-4o-mini")
    refusal = refused(decide("user", [GatewayLimits(models=("claude-*",))], Usage(), MODEL, 0.0))
    assert refusal.limit == "models" and "claude-*" in refusal.message


def test_every_layer_must_allow_the_model() -> None:
    layers = [GatewayLimits(models=("gpt-*",)), GatewayLimits(models=("*-mini",))]
    assert isinstance(decide("session", layers, Usage(), MODEL, 0.0), Usage)
    layers = [GatewayLimits(models=("gpt-*",)), GatewayLimits(models=("*-nano",))]
    assert refused(decide("session", layers, Usage(), MODEL, 0.0)).limit == "models"


def test_layers_only_tighten() -> None:
    loose = GatewayLimits(max_cost_usd=10, max_calls=100, rate_per_minute=600)
    tight = GatewayLimits(max_cost_usd=1, max_calls=5, rate_per_minute=6)
    for layers in ([loose, tight], [tight, loose]):
        both = tightest(layers)
        assert (both.max_cost_usd, both.max_calls, both.rate_per_minute) == (1, 5, 6)
    assert tightest([GatewayLimits(), tight]).max_calls == 5


def test_the_rate_bucket_refills_at_its_rate() -> None:
    limits = [GatewayLimits(rate_per_minute=2)]
    usage = Usage()
    for _ in range(2):  # a full bucket: a minute's calls at once
        decided = decide("session", limits, usage, MODEL, 100.0)
        assert isinstance(decided, Usage)
        usage = decided
    refusal = refused(decide("session", limits, usage, MODEL, 100.0))
    assert refusal.limit == "rate_per_minute"
    assert refusal.retry_after == pytest.approx(30.0)  # one call every 30 s
    assert refused(decide("session", limits, usage, MODEL, 115.0)).retry_after == pytest.approx(
        15.0
    )
    assert isinstance(decide("session", limits, usage, MODEL, 130.0), Usage)


def test_a_refused_call_is_not_counted_in_any_scope() -> None:
    checks: list[tuple[Scope, list[GatewayLimits], Usage]] = [
        ("session", [GatewayLimits(max_calls=10)], Usage(calls=1)),
        ("user", [GatewayLimits(max_calls=1)], Usage(calls=1)),
    ]
    refusal = refused(decide_all(checks, MODEL, 0.0))
    assert refusal.scope == "user"
    admitted = decide_all([checks[0]], MODEL, 0.0)
    assert isinstance(admitted, list) and admitted[0].calls == 2


def test_refusals_say_retry_later_only_for_the_rate() -> None:
    rate = Refusal("session", "rate_per_minute", "slow down", retry_after=1.2).error()
    assert (rate.status, rate.code) == (429, "rate_limit_exceeded")
    assert rate.headers["Retry-After"] == "2" and rate.headers["retry-after-ms"] == "1200"
    assert "x-should-retry" not in rate.headers
    cap = Refusal("user", "max_calls", "spent").error()
    assert (cap.status, cap.code, cap.headers["x-should-retry"]) == (
        429,
        "insufficient_quota",
        "false",
    )
    body = openai_protocol.error_body(cap.status, cap.message, cap.code)["error"]
    assert body["type"] == "insufficient_quota"  # as OpenAI writes a spent quota
    model = Refusal("user", "models", "no").error()
    assert (model.status, model.headers["x-should-retry"]) == (403, "false")


def test_the_header_reads_every_limit() -> None:
    limits = parse_limits("max_cost=5; max_calls=100; models=gpt-4o* claude-*; rate=60")
    assert limits == GatewayLimits(
        max_cost_usd=5, max_calls=100, models=("gpt-4o*", "claude-*"), rate_per_minute=60
    )
    assert parse_limits("") == GatewayLimits()
    for wrong in ("max_cost=-1", "calls=3", "rate=0", "max_calls=many"):
        with pytest.raises(ValueError):
            parse_limits(wrong)


def test_a_session_config_with_unreadable_limits_allows_nothing() -> None:
    def limits_of(config: dict[str, object]) -> GatewayLimits:
        return session_limits(SessionConfig.model_validate(config))

    assert limits_of({"limits": {"max_calls": 2}}) == GatewayLimits(max_calls=2)
    assert limits_of({"agent": "external"}) == GatewayLimits()
    assert limits_of({"limits": {"max_calls": -1}}) == GatewayLimits(max_calls=0)
    assert session_limits(None) == GatewayLimits()


def test_a_recorded_refusal_is_answered_again_as_it_was() -> None:
    limits = GatewayLimits(max_calls=1, models=("gpt-*",), rate_per_minute=1)
    cases = {
        "rate_limit_exceeded": decide("session", [limits], Usage(tokens=0.0), MODEL, 0.0),
        "insufficient_quota": decide("user", [limits], Usage(calls=1), MODEL, 0.0),
        "model_not_allowed": decide("user", [GatewayLimits(models=("x",))], Usage(), MODEL, 0.0),
    }
    for code, decided in cases.items():
        again = recorded_refusal(refused(decided).message)
        first = refused(decided).error()
        assert (again.status, again.code, again.message) == (first.status, code, first.message)
    rate = recorded_refusal(refused(cases["rate_limit_exceeded"]).message)
    assert rate.headers["Retry-After"] == "1"
