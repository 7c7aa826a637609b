"""`chronicle users ...` and `chronicle tokens ...`: who may use the access service.

A token is printed once, when it is created; the database keeps only its sha256, so a lost
token is revoked and replaced, never recovered.
"""

from __future__ import annotations

import argparse
import re
import sys
import uuid
from datetime import UTC, datetime, timedelta

from app.cli.log import open_owner_store
from app.config import Settings

LIFETIME_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def lifetime(text: str) -> timedelta:
    """``--expires``: a span such as ``30d``, ``12h``, ``90m``, ``2w``, ``1y``."""
    found = re.fullmatch(r"\s*(\d+)\s*([mhdwy])\s*", text)
    if not found or int(found.group(1)) == 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a lifetime: give a whole number and a unit, e.g. 90m, 12h, 30d, "
            "2w or 1y"
        )
    return timedelta(seconds=int(found.group(1)) * LIFETIME_UNITS[found.group(2)])


def token_id(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a token id (a UUID, as `chronicle tokens list` shows)"
        ) from None


def add_parsers(commands: argparse._SubParsersAction) -> None:
    users = commands.add_parser("users", help="the access service's users")
    sub = users.add_subparsers(dest="users_command", required=True, metavar="COMMAND")
    add = sub.add_parser("add", help="add a user")
    add.add_argument("name")
    add.add_argument("--admin", action="store_true", help="sees and steers every session")
    sub.add_parser("list", help="list the users")

    tokens = commands.add_parser("tokens", help="the users' API tokens")
    sub = tokens.add_subparsers(dest="tokens_command", required=True, metavar="COMMAND")
    create = sub.add_parser("create", help="make a token for a user (printed once)")
    create.add_argument("name", help="the user")
    create.add_argument("--label", default="", help="what the token is for")
    create.add_argument(
        "--expires", type=lifetime, metavar="SPAN", help="lifetime, e.g. 30d (default: none)"
    )
    sub.add_parser("list", help="list the tokens (never the tokens themselves)")
    revoke = sub.add_parser("revoke", help="revoke a token at once")
    revoke.add_argument("id", type=token_id, metavar="ID")


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if moment else "-"


async def users(args: argparse.Namespace, settings: Settings) -> int:
    from app.store.users import add_user, list_users

    # the owner's login: only it may make an admin (migration 0014)
    async with await open_owner_store(settings) as store:
        if args.users_command == "add":
            user = await add_user(store, args.name, is_admin=args.admin)
            role = "admin" if user.is_admin else "user"
            print(f"added {role} {user.name} ({user.id})")
            print(f"make a token with: chronicle tokens create {user.name}", file=sys.stderr)
            return 0
        for user in await list_users(store):
            role = "admin" if user.is_admin else "user"
            print(f"{user.name:<24} {role:<6} {_when(user.created_at)}  {user.id}")
        return 0


async def tokens(args: argparse.Namespace, settings: Settings) -> int:
    from app.store.users import UnknownUserError, create_token, find_user, list_tokens, revoke_token

    # the owner's login: only it may make an admin's token (migration 0014)
    async with await open_owner_store(settings) as store:
        if args.tokens_command == "create":
            user = await find_user(store, args.name)
            if user is None:
                raise UnknownUserError(args.name)
            expires = datetime.now(UTC) + args.expires if args.expires else None
            info, token = await create_token(store, user.id, label=args.label, expires_at=expires)
            print(token)
            print(
                f"token {info.id} for {user.name}, expires {_when(info.expires_at)}; it is "
                "shown only now: keep it secret",
                file=sys.stderr,
            )
            return 0
        if args.tokens_command == "revoke":
            if not await revoke_token(store, args.id):
                print(
                    f"error: no live token {args.id} (see chronicle tokens list)", file=sys.stderr
                )
                return 1
            print(f"revoked token {args.id}")
            return 0
        now = datetime.now(UTC)
        for info in await list_tokens(store):
            if info.revoked_at is not None:
                state = "revoked"
            elif info.expires_at is not None and info.expires_at <= now:
                state = "expired"
            else:
                state = "live"
            print(
                f"{info.id}  {info.user_name:<16} {state:<8} expires {_when(info.expires_at)}  "
                f"last used {_when(info.last_used_at)}  {info.label}"
            )
        return 0
