"""A recorded session read from the store as an ATIF trajectory (``export.py`` maps it)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from app.errors import ChronicleError
from app.interchange.atif.export import trajectory
from app.interchange.atif.steps import Item
from app.store import EventStore


class AtifExportError(ChronicleError):
    """The session cannot be written as ATIF (none of that id, or not an agent's)."""


async def session_trajectory(store: EventStore, session: UUID) -> dict[str, Any]:
    """The session's trajectory, its first model call's system prompt read from the stored
    prompt messages."""
    events = await store.read(session)
    if not events:
        raise AtifExportError(f"no session {session}")
    config = events[0].payload.get("config") if events[0].kind == "session.created" else None
    if isinstance(config, dict) and config.get("platform_log"):
        raise AtifExportError(f"session {session} is the platform's audit log, no agent's")
    first = next((e for e in events if e.kind == "llm.call"), None)
    hashes = [str(h) for h in (first.payload.get("prompt") or [])[:1]] if first else []
    messages = await store.read_messages(hashes) if hashes else {}
    items = [Item(e.kind, e.source, e.seq, e.cause, e.payload, e.created_at) for e in events]
    return trajectory(session, items, messages)
