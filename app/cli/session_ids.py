"""Session ids on the command line: a whole id or a unique prefix of one (the first 8
characters the page and ``chronicle sessions`` show). The argument type keeps a prefix as it
is; ``resolve_prefixes`` turns every prefix of a parsed command into its session's id before
the command runs, in one place, so each command handles ids only."""

from __future__ import annotations

import argparse
import uuid
from typing import TYPE_CHECKING, Any

from app.errors import ChronicleError
from app.events.id_prefix import NotAnIdPrefix, ambiguity, id_prefix

if TYPE_CHECKING:
    from app.config import Settings


class SessionPrefix(str):
    """A session-id prefix given where a session id is expected, not resolved yet."""


class UnknownSessionPrefix(ChronicleError):
    """A prefix that names no session, or more than one."""


def session_id(text: str) -> uuid.UUID | SessionPrefix:
    """The argparse type of a SESSION argument."""
    try:
        return uuid.UUID(text)
    except ValueError:
        pass
    try:
        return SessionPrefix(id_prefix(text))
    except NotAnIdPrefix as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _prefixes(args: argparse.Namespace) -> list[SessionPrefix]:
    found: list[SessionPrefix] = []
    for value in vars(args).values():
        values = value if isinstance(value, list) else [value]
        found.extend(v for v in values if isinstance(v, SessionPrefix))
    return found


def _replaced(value: Any, ids: dict[str, uuid.UUID]) -> Any:
    if isinstance(value, SessionPrefix):
        return ids[value]
    if isinstance(value, list):
        return [_replaced(v, ids) for v in value]
    return value


async def resolve_prefixes(args: argparse.Namespace, settings: Settings) -> None:
    """Every ``SessionPrefix`` in ``args`` replaced by the one session id it begins, or
    ``UnknownSessionPrefix`` naming the first prefix that matches none or several."""
    wanted = _prefixes(args)
    if not wanted:
        return
    from app.cli.log import open_store
    from app.sessions.sql.id_lookup import sessions_beginning

    ids: dict[str, uuid.UUID] = {}
    async with await open_store(settings) as store:
        for prefix in wanted:
            matches = await sessions_beginning(store, prefix)
            if len(matches) != 1:
                raise UnknownSessionPrefix(ambiguity(prefix, matches))
            ids[prefix] = matches[0]
    for name, value in vars(args).items():
        setattr(args, name, _replaced(value, ids))
