"""The platform's audit log takes only audit records after its own ``session.created``,
whoever appends (migration 0016).

Before, a login in chronicle_app could start the log itself, before the platform's first
audit record, with a ``session.created`` of its own (unmarked, with an agent's config: then
``chronicle resume`` of the log ran an agent into it), or append any kind to it (a message, a
run). Forged ``audit.*`` records stay possible (it is the application; docs/security.md).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import asyncpg
import pytest

from app.events.canonical import canonical_json
from app.events.platform_audit import (
    PLATFORM_LOG_CREATED_ID,
    PLATFORM_LOG_ID,
    AuditUserChanged,
    platform_log_created,
)
from app.sessions.sql.platform_audit import append_audit, read_audit
from app.store import EventStore

APPEND_ONE = "SELECT * FROM chronicle_append_one($1, $2, $3, $4, 'system', NULL, $5, 1::smallint)"


@pytest.mark.parametrize(
    ("event_id", "kind", "payload"),
    [
        # a genesis of the attacker's: unmarked, with an agent's config to resume it with
        (
            "00000000-0000-4000-8000-0000000000aa",
            "session.created",
            {"config": {"model": "gpt-x"}, "title": "Chronicle platform audit log"},
        ),
        # the platform's own event id, but not marked
        (str(PLATFORM_LOG_CREATED_ID), "session.created", {"config": {}, "title": "log"}),
        ("00000000-0000-4000-8000-0000000000ab", "message", {"content": "hi", "sender": "ann"}),
        # an audit record first: the log would have no session.created at all
        (
            "00000000-0000-4000-8000-0000000000ad",
            "audit.user_changed",
            {"actor": "cli:root", "change": "added", "name": "ann", "via": "cli"},
        ),
    ],
)
async def test_the_app_login_cannot_start_the_log_or_append_other_kinds(
    store: EventStore,
    app_login: asyncpg.Connection,
    event_id: str,
    kind: str,
    payload: dict[str, object],
) -> None:
    with pytest.raises(asyncpg.PostgresError, match="platform's audit log") as raised:
        await app_login.fetch(
            APPEND_ONE, PLATFORM_LOG_ID, 0, event_id, kind, canonical_json(payload)
        )
    assert raised.value.sqlstate == "CR014"
    assert await store.last_seq(PLATFORM_LOG_ID) == 0


async def test_the_platforms_own_records_are_appended_as_before(
    store: EventStore, app_login: asyncpg.Connection
) -> None:
    await append_audit(
        store, AuditUserChanged(actor="cli:root", via="cli", name="ann", change="added")
    )
    [record] = await read_audit(store)
    assert record.kind == "audit.user_changed"
    assert (await store.verify(PLATFORM_LOG_ID)).ok
    created = platform_log_created()
    assert (await store.read(PLATFORM_LOG_ID))[0].event_id == created.event_id
    with pytest.raises(asyncpg.PostgresError, match="platform's audit log"):
        await app_login.fetch(
            APPEND_ONE,
            PLATFORM_LOG_ID,
            2,
            "00000000-0000-4000-8000-0000000000ac",
            "message",
            canonical_json({"content": "hi", "sender": "ann"}),
        )


def test_the_migrations_ids_are_the_protocols() -> None:
    path = Path(__file__).parents[3] / "migrations" / "versions" / "0016_platform_audit.py"
    spec = importlib.util.spec_from_file_location("migration_0016_kinds", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.PLATFORM_LOG_ID == str(PLATFORM_LOG_ID)
    assert module.PLATFORM_LOG_CREATED_ID == str(PLATFORM_LOG_CREATED_ID)
