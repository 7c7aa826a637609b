"""The kind lists the database holds, from the registry: what the SQL files' placeholders
(``{action_kinds}`` ...) must be rendered with for the schema to agree with the code.

A revision keeps the list it rendered as a literal tuple (what it sent must never change
when a kind is added later), so nothing renders these at migration time; a test holds
``migrations/sql/schema.sql`` (the migrated schema) to them, and fails when a kind is added
without a revision that renders the kind functions again. Its failure prints that revision:
the previous list plus the new kind (``kinds_kept_by``), rendered by
``migrations.helpers.render_kind_functions``; then ``./dev schema``.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.events.registry import ACTION_KINDS, AWAITED_KINDS, EVENT_TYPES, OBSERVATION_KINDS

#: Each placeholder of ``migrations/sql`` that stands for a kind list, and that list.
KIND_LISTS: dict[str, frozenset[str]] = {
    "action_kinds": ACTION_KINDS,
    "observation_kinds": OBSERVATION_KINDS,
    "tool_kinds": AWAITED_KINDS,  # what the tool_calls view lists: actions a service answers
    "event_kinds": frozenset(EVENT_TYPES),
}


def sql_kinds(kinds: Iterable[str]) -> str:
    """Kinds as SQL string literals in sorted order, as a revision renders them."""
    return ", ".join(f"'{kind}'" for kind in sorted(kinds))
