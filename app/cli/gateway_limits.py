"""`chronicle users limits NAME [--max-cost USD] [--max-calls N] [--models P,...] [--rate N]
[--reset]`: a user's limits on the gateway's calls (docs/gateway.md, "Limits"), and the
options `chronicle record` gives a new session's own limits with.

A limit not given stays as it was; ``none`` clears it (the deployment's default,
``gateway_limits.user``, holds again). With no option, the limits and what the user has used
are shown. ``--reset`` starts the user's counting again (a new budget). Written through the
database owner's login: the application's may only read a user's limits (migration 0019).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from app.config import GatewayLimits, Settings

#: The options, their GatewayLimits field, and how each is read.
FIELDS = {
    "max_cost": "max_cost_usd",
    "max_calls": "max_calls",
    "models": "models",
    "rate": "rate_per_minute",
}
CLEAR = "none"


def _amount(text: str, *, zero: bool, what: str) -> float | str:
    """A finite number (``zero``: 0 allowed) or ``none``; otherwise argparse's error naming
    ``what`` it should be."""
    if text.strip().lower() == CLEAR:
        return CLEAR
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def _cost(text: str) -> float | str:
    return _amount(text, zero=True, what="an amount of USD (e.g. 5 or 0.25)")


def _calls(text: str) -> int | str:
    if text.strip().lower() == CLEAR:
        return CLEAR
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of calls (e.g. 100)")
    return int(text)


def _rate(text: str) -> float | str:
    return _amount(text, zero=False, what="a rate in calls per minute (e.g. 60)")


def _models(text: str) -> tuple[str, ...] | str:
    if text.strip().lower() == CLEAR:
        return CLEAR
    return tuple(text.replace(",", " ").split())


def add_limit_options(parser: argparse.ArgumentParser, *, clearable: bool) -> None:
    """``--max-cost``, ``--max-calls``, ``--models`` and ``--rate``."""
    clear = " (none: the deployment's default)" if clearable else ""
    parser.add_argument(
        "--max-cost", type=_cost, metavar="USD", help=f"refuse calls once this is spent{clear}"
    )
    parser.add_argument(
        "--max-calls", type=_calls, metavar="N", help=f"make at most N calls{clear}"
    )
    parser.add_argument(
        "--models",
        type=_models,
        metavar="PATTERNS",
        help=f"the upstream models that may answer, e.g. 'gpt-4o*,claude-*'{clear}",
    )
    parser.add_argument(
        "--rate", type=_rate, metavar="PER_MINUTE", help=f"calls per minute, at most{clear}"
    )


def given_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The limit options given: GatewayLimits field -> value (``CLEAR`` for none)."""
    return {
        field: getattr(args, option)
        for option, field in FIELDS.items()
        if getattr(args, option, None) is not None
    }


def session_limits_config(args: argparse.Namespace) -> dict[str, Any]:
    """``chronicle record``'s limit options as the new session's ``session.created`` config
    (``config.limits``, which the gateway reads: app/external/limits.py)."""
    given = {field: value for field, value in given_limits(args).items() if value != CLEAR}
    if not given:
        return {}
    limits = GatewayLimits.model_validate(given)
    return {"limits": limits.model_dump(exclude_none=True, mode="json")}


def add_parser(users: Any) -> None:
    limits = users.add_parser(
        "limits",
        help="show or set a user's limits on the model gateway's calls",
        description="Show (no option) or set a user's limits on the calls its agents make "
        "through the gateway; an option not given stays as it was.",
    )
    limits.add_argument("name")
    add_limit_options(limits, clearable=True)
    limits.add_argument(
        "--reset", action="store_true", help="count the user's calls and cost from zero again"
    )


def _shown(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, tuple):
        return ",".join(value) or "(none)"
    return f"{value:g}" if isinstance(value, float) else str(value)


async def user_limits_command(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.log import open_owner_store
    from app.external.limit_guard import user_layer
    from app.external.sql import gateway_limits
    from app.sessions.sql.users import UnknownUserError, find_user

    async with await open_owner_store(settings) as store:
        user = await find_user(store, args.name)
        if user is None:
            raise UnknownUserError(args.name)
        given = given_limits(args)
        if given:
            now = await gateway_limits.user_limits(store, user.id) or gateway_limits.UserLimits()
            values = {field: getattr(now, field) for field in FIELDS.values()}
            values.update({f: None if v == CLEAR else v for f, v in given.items()})
            await gateway_limits.set_user_limits(
                store, user.id, gateway_limits.UserLimits(**values)
            )
        if args.reset:
            await gateway_limits.reset_usage(store, ("user", user.id))
        own = await gateway_limits.user_limits(store, user.id)
        held = user_layer(own, settings.gateway.limits.user)
        used = await gateway_limits.usage_of(store, ("user", user.id))
        print(f"limits of {user.name} (its own, else the deployment's default):")
        for option, field in FIELDS.items():
            mine = getattr(own, field) if own is not None else None
            source = "" if mine is not None or getattr(held, field) is None else " (default)"
            print(f"  {option.replace('_', '-'):<10} {_shown(getattr(held, field))}{source}")
        if used is None:
            print("  used: nothing counted yet")
        else:
            print(f"  used: {used.calls} calls, ${used.cost_usd:.6g}")
    return 0
