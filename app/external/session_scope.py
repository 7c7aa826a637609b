"""A token scoped to one session, without a column for it: its label says ``session:<id>``.

``chronicle record`` mints each command a token labelled so; the gateway records every call
made with it in that session, and refuses one that names another (``X-Chronicle-Session``).
A label is set when a token is made and never changed, and the session must still be the
token's user's own, so a label can only narrow what a token reaches. An operator can make
such a token by hand for a launcher of their own: ``chronicle tokens create NAME --label
session:<id>``. (A column on ``api_tokens`` would say it better; that needs a migration.)
"""

from __future__ import annotations

from uuid import UUID

PREFIX = "session:"


def scope_label(session_id: UUID) -> str:
    """The label of a token scoped to ``session_id``."""
    return f"{PREFIX}{session_id}"


def scoped_session(label: str) -> UUID | None:
    """The session a token with this label is scoped to, or None (any other label)."""
    if not label.startswith(PREFIX):
        return None
    try:
        return UUID(label.removeprefix(PREFIX).strip())
    except ValueError:
        return None
