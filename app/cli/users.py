"""`chronicle users ...`, `chronicle tokens ...` and `chronicle login-link`: who may use the
access service, and how a browser signs in.

A token is printed once, when it is created; the database keeps only its sha256, so a lost
token is revoked and replaced, never recovered. A token lives ``DEFAULT_LIFETIME`` unless told
otherwise (``--expires never`` says so explicitly). A sign-in link holds a one-time code, not
a token: it works once, for ``server_login_code_minutes``, from the page itself.
"""

from __future__ import annotations

import argparse
import re
import sys
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from app.cli import gateway_limits
from app.cli.log import open_owner_store
from app.config import Settings
from app.sessions import platform_audit
from app.sessions.platform_audit import terminal_actor
from app.sessions.sql.platform_audit import token_owner

if TYPE_CHECKING:
    from app.sessions.person_erasure import PersonErased
    from app.sessions.sql.users import TokenInfo, User
    from app.store import EventStore

LIFETIME_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
#: A token's lifetime when ``--expires`` is not given: a forgotten token does not live forever.
DEFAULT_LIFETIME = "90d"
#: Where ``chronicle serve`` listens by default: the sign-in link's server.
DEFAULT_SERVER_URL = "http://127.0.0.1:8000"


def lifetime(text: str) -> timedelta | None:
    """``--expires``: a span such as ``30d``, ``12h``, ``90m``, ``2w``, ``1y``, or ``never``
    (None)."""
    if text.strip().lower() == "never":
        return None
    found = re.fullmatch(r"\s*(\d+)\s*([mhdwy])\s*", text)
    if not found or int(found.group(1)) == 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a lifetime: give a whole number and a unit, e.g. 90m, 12h, 30d, "
            "2w or 1y, or never"
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
    users_parser = commands.add_parser("users", help="the access service's users")
    sub = users_parser.add_subparsers(dest="users_command", required=True, metavar="COMMAND")
    add = sub.add_parser("add", help="add a user")
    add.add_argument("name")
    add.add_argument("--admin", action="store_true", help="sees and steers every session")
    sub.add_parser("list", help="list the users")
    for change, text in USER_CHANGES.items():
        sub.add_parser(change, help=text).add_argument("name")
    logins = sub.add_parser("logins", help="list a user's live browser logins")
    logins.add_argument("name")
    logout = sub.add_parser("logout", help="end every browser login of a user at once")
    logout.add_argument("name")
    erase = sub.add_parser(
        "erase",
        help="erase a person: every session they created, their name wherever Chronicle "
        "holds it, their tokens' labels and logins' addresses (cannot be undone)",
    )
    erase.add_argument("name")
    erase.add_argument("--yes", action="store_true", help="do it (without: say what would go)")
    gateway_limits.add_parser(sub)

    tokens_parser = commands.add_parser("tokens", help="the users' API tokens")
    sub = tokens_parser.add_subparsers(dest="tokens_command", required=True, metavar="COMMAND")
    create = sub.add_parser("create", help="make a token for a user (printed once)")
    create.add_argument("name", help="the user")
    create.add_argument("--label", default="", help="what the token is for")
    create.add_argument(
        "--expires",
        type=lifetime,
        default=lifetime(DEFAULT_LIFETIME),
        metavar="SPAN",
        help=f"lifetime, e.g. 30d, or never (default: {DEFAULT_LIFETIME})",
    )
    create.add_argument(
        "--link",
        action="store_true",
        help="also print a one-time sign-in link for the web page (the login it makes ends "
        "with this token)",
    )
    create.add_argument("--url", default=DEFAULT_SERVER_URL, help="the server, for --link")
    create.add_argument(
        "--replace",
        action="store_true",
        help="first revoke the user's live tokens of the same --label (a command that makes "
        "one on every start, as ./dev up does, leaves one live, not one per start)",
    )
    sub.add_parser("list", help="list the tokens (never the tokens themselves)")
    revoke = sub.add_parser("revoke", help="revoke a token at once")
    revoke.add_argument("id", type=token_id, metavar="ID")

    link = commands.add_parser(
        "login-link",
        help="print a one-time sign-in link for a user's browser (works once, for minutes)",
    )
    link.add_argument("name", help="the user")
    link.add_argument(
        "--url", default=DEFAULT_SERVER_URL, help=f"the server (default: {DEFAULT_SERVER_URL})"
    )
    users_parser.set_defaults(handler=users)
    tokens_parser.set_defaults(handler=tokens)
    link.set_defaults(handler=login_link)


#: ``chronicle users CHANGE NAME``: what each change does.
USER_CHANGES = {
    "disable": "refuse every token of a user and end its browser logins, until enabled",
    "enable": "let a disabled user's live tokens work again",
    "remove": "remove a user for good: every token revoked, every login ended",
    "promote": "make a user an admin",
    "demote": "make an admin a plain user",
}


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if moment else "-"


def _role(user: User) -> str:
    if user.removed_at is not None:
        return "removed"
    state = "admin" if user.is_admin else "user"
    return f"{state} (disabled)" if user.disabled_at is not None else state


async def users(args: argparse.Namespace, settings: Settings) -> int:
    from app.sessions.sql.users import add_user, list_users

    # the owner's login: only it may make an admin (migration 0014)
    if args.users_command == "limits":
        return await gateway_limits.user_limits_command(args, settings)
    async with await open_owner_store(settings) as store:
        if args.users_command == "add":
            user = await add_user(store, args.name, is_admin=args.admin)
            await platform_audit.user_changed(
                store, terminal_actor(), user.name, "added", is_admin=user.is_admin
            )
            role = "admin" if user.is_admin else "user"
            print(f"added {role} {user.name} ({user.id})")
            print(f"make a token with: chronicle tokens create {user.name}", file=sys.stderr)
            return 0
        if args.users_command in USER_CHANGES:
            return await change_user(store, args.users_command, args.name)
        if args.users_command == "logins":
            return await show_logins(store, args.name)
        if args.users_command == "logout":
            return await end_user_logins(store, args.name)
        if args.users_command == "erase":
            return await erase_user(store, args.name, settings, sure=args.yes)
        for user in await list_users(store):
            print(f"{user.name:<24} {_role(user):<16} {_when(user.created_at)}  {user.id}")
        return 0


async def _audited(store: EventStore, user: User, changed: bool, change: str) -> None:
    """A change that changed something goes into the platform's audit log, with the role the
    user has now (``user`` is as it was before the change)."""
    from app.sessions.sql.users import find_user

    if changed:
        now = await find_user(store, user.name)
        await platform_audit.user_changed(
            store, terminal_actor(), user.name, change, is_admin=now.is_admin if now else None
        )


#: What each change says: (the past tense the audit log records, when it changed the user,
#: when the user was so already).
CHANGE_WORDS = {
    "disable": ("disabled", "disabled (its tokens refused, its logins ended)", "disabled"),
    "enable": ("enabled", "enabled", "enabled"),
    "remove": ("removed", "removed (its tokens revoked, its logins ended)", "removed"),
    "promote": (
        "promoted",
        "now an admin (its browser logins ended, its tokens not made by `chronicle tokens "
        "create` revoked)",
        "an admin",
    ),
    "demote": ("demoted", "now a plain user", "a plain user"),
}


async def change_user(store: EventStore, change: str, name: str) -> int:
    """``chronicle users CHANGE NAME``: the store's ``CHANGE_user`` (app/server/sql/user_states.py),
    recorded in the audit log when it changed something."""
    from app.server.sql import user_states

    apply: Callable[[EventStore, str], Awaitable[tuple[User, bool]]] = getattr(
        user_states, f"{change}_user"
    )
    user, changed = await apply(store, name)
    past, done, already = CHANGE_WORDS[change]
    await _audited(store, user, changed, past)
    print(f"{user.name}: {done}" if changed else f"{user.name} was {already} already")
    return 0


async def erase_user(store: EventStore, name: str, settings: Settings, *, sure: bool) -> int:
    """``chronicle users erase NAME`` (app/sessions/person_erasure.py); without ``--yes``, what
    would go."""
    from app.cli.erase import erased_on_disk
    from app.cli.progress import StderrProgress
    from app.sessions.person_erasure import PersonNotErased, erase_person
    from app.sessions.sql.retention_candidates import owned_by
    from app.store.integrity import signing_key

    user = await _known_user(store, name)
    if not sure:
        sessions = await owned_by(store, user.id)
        print(
            f"would erase user {user.name} ({user.id}): {len(sessions)} sessions, the name "
            "wherever Chronicle holds it, tokens' labels, logins' addresses; run again with "
            "--yes to do it",
            file=sys.stderr,
        )
        return 1
    key, _, _ = signing_key(settings.anchor_key_file, settings.data_dir)
    try:
        done = await erase_person(
            store, name, key=key, actor=terminal_actor(), progress=StderrProgress("erase")
        )
    except PersonNotErased as exc:
        print(f"error: {exc}", file=sys.stderr)
        await erased_on_disk(store, [exc.sessions], settings, as_json=False)
        return 1
    print(
        f"erased user {done.user_id}: now {done.renamed_to}; {len(done.sessions.erased)} "
        f"sessions erased, {done.redacted} mentions redacted"
    )
    for place in done.kept:
        print(f"kept: {place}", file=sys.stderr)
    on_disk = await _erased_person_on_disk(store, done, settings)
    return 1 if done.kept or on_disk else 0


async def _erased_person_on_disk(store: EventStore, done: PersonErased, settings: Settings) -> int:
    """The person's sessions, and the parts of others that named them, removed from the
    copies on this machine's disk (every archive too: a person's request); said so."""
    from app.cli.erase import erased_on_disk
    from app.cli.on_disk import report_disk_changes
    from app.store import existing_anchor_key, remove_parts_on_disk

    sessions = await erased_on_disk(store, [done.sessions], settings, as_json=False)
    parts = await remove_parts_on_disk(
        store,
        done.parts,
        done.texts,
        data_dir=settings.data_dir,
        key=existing_anchor_key(settings.anchor_key_file, settings.data_dir),
    )
    return max(sessions, report_disk_changes(parts, as_json=False))


async def _known_user(store: EventStore, name: str) -> User:
    from app.sessions.sql.users import UnknownUserError, find_user

    user = await find_user(store, name)
    if user is None:
        raise UnknownUserError(name)
    return user


async def show_logins(store: EventStore, name: str) -> int:
    from app.server.sql.logins import list_logins

    user = await _known_user(store, name)
    found = await list_logins(store, user.id)
    if not found:
        print(f"{user.name} has no live browser login", file=sys.stderr)
    for login in found:
        made_with = f"token {login.token_id}" if login.token_id else "sign-in link"
        print(
            f"{login.id}  from {login.address or '-':<15} since {_when(login.created_at)}  "
            f"last used {_when(login.last_used_at)}  expires {_when(login.expires_at)}  "
            f"{made_with}"
        )
    return 0


async def end_user_logins(store: EventStore, name: str) -> int:
    from app.server.sql.logins import end_logins

    user = await _known_user(store, name)
    ended = await end_logins(store, user.id)
    await _audited(store, user, ended > 0, "logins_ended")
    print(f"ended {ended} browser login{'' if ended == 1 else 's'} of {user.name}")
    return 0


def sign_in_link(url: str, code: str) -> str:
    """The link: the code in the fragment, which a browser never sends to the server."""
    return f"{url.rstrip('/')}/login#code={code}"


async def login_link(args: argparse.Namespace, settings: Settings) -> int:
    """``chronicle login-link NAME``: a one-time sign-in link for the user's browser."""
    from app.server.sql.logins import create_login_code

    # the owner's login: only it may make a link that signs in as an admin (as for tokens)
    async with await open_owner_store(settings) as store:
        user = await _known_user(store, args.name)
        code, expires = await create_login_code(
            store, user.id, minutes=settings.server.login_code_minutes
        )
        print(sign_in_link(args.url, code))
        print(
            f"a sign-in link for {user.name}: it works once, until {_when(expires)} UTC",
            file=sys.stderr,
        )
    return 0


def _token_state(info: TokenInfo, now: datetime) -> str:
    """``revoked``, ``expired`` or ``live``, as ``chronicle tokens list`` shows it."""
    if info.revoked_at is not None:
        return "revoked"
    if info.expires_at is not None and info.expires_at <= now:
        return "expired"
    return "live"


async def tokens(args: argparse.Namespace, settings: Settings) -> int:
    from app.server.sql.user_states import RemovedUserError
    from app.sessions.sql.users import (
        UnknownUserError,
        create_token,
        find_user,
        list_tokens,
        revoke_token,
    )

    # the owner's login: only it may make an admin's token (migration 0014)
    async with await open_owner_store(settings) as store:
        if args.tokens_command == "create":
            user = await find_user(store, args.name)
            if user is None:
                raise UnknownUserError(args.name)
            if user.removed_at is not None:
                raise RemovedUserError(user.name)
            if args.replace:
                if not args.label:
                    print("error: --replace needs a --label to know which tokens", file=sys.stderr)
                    return 2
                now = datetime.now(UTC)
                for old in await list_tokens(store):
                    live = _token_state(old, now) == "live"
                    if old.user_id == user.id and old.label == args.label and live:
                        if await revoke_token(store, old.id):
                            await platform_audit.token_revoked(
                                store, terminal_actor(), old.id, user.name
                            )
                            print(f"revoked token {old.id} ({args.label})", file=sys.stderr)
            expires = datetime.now(UTC) + args.expires if args.expires else None
            info, token = await create_token(store, user.id, label=args.label, expires_at=expires)
            await platform_audit.token_created(store, terminal_actor(), info)
            print(token)
            lifetime_left = (
                f"expires {_when(info.expires_at)}" if info.expires_at else "never expires"
            )
            print(
                f"token {info.id} for {user.name}, {lifetime_left}; it is shown only now: keep "
                "it secret",
                file=sys.stderr,
            )
            if args.link:
                from app.server.sql.logins import create_login_code

                code, until = await create_login_code(
                    store, user.id, minutes=settings.server.login_code_minutes, token_id=info.id
                )
                print(sign_in_link(args.url, code))
                print(f"the sign-in link works once, until {_when(until)} UTC", file=sys.stderr)
            return 0
        if args.tokens_command == "revoke":
            if not await revoke_token(store, args.id):
                print(
                    f"error: no live token {args.id} (see chronicle tokens list)", file=sys.stderr
                )
                return 1
            owner = await token_owner(store, args.id)
            await platform_audit.token_revoked(store, terminal_actor(), args.id, owner)
            print(f"revoked token {args.id}")
            return 0
        now = datetime.now(UTC)
        for info in await list_tokens(store):
            state = _token_state(info, now)
            print(
                f"{info.id}  {info.user_name:<16} {state:<8} expires "
                f"{_when(info.expires_at) if info.expires_at else 'never'}  "
                f"last used {_when(info.last_used_at)}  {info.label}"
            )
        return 0
