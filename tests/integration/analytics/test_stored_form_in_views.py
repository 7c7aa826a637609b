"""What docs/analytics.md says a view shows of a string the log keeps in its stored form: the
reference's JSON text, never the text itself (the analyst cannot read blobs)."""

from __future__ import annotations

import json
import uuid

from app.events import Run, SessionCreated
from app.store import EventStore
from app.store.analytics import run_query


async def test_a_long_command_shows_as_its_blob_reference(
    store: EventStore, analyst_database_url: str
) -> None:
    command = "echo " + "x" * 70_000
    session = uuid.uuid4()
    await store.append(
        session, [SessionCreated(title="long"), Run(command=command)], expected_seq=0
    )
    result = await run_query(
        analyst_database_url,
        "SELECT command, target FROM tool_calls WHERE session_id = $1",
        [session],
    )
    [(shown, target)] = result.rows
    reference = json.loads(shown)
    assert set(reference) == {"$blob", "chars"} and reference["chars"] == len(command)
    assert target == shown
    with_nul = uuid.uuid4()
    await store.append(
        with_nul, [SessionCreated(title="nul"), Run(command="a\x00b")], expected_seq=0
    )
    result = await run_query(
        analyst_database_url, "SELECT command FROM tool_calls WHERE session_id = $1", [with_nul]
    )
    assert set(json.loads(result.rows[0][0])) == {"$esc"}
