"""The session list page built in one validation from the fetched records is the page the
API answered with before (a ``SessionRow`` per record, then a ``SessionSummary`` per row):
the same JSON, byte for byte, over rows covering every field's cases (no title, a long
multi-line title, no price, a partly unknown price, a working session with and without a
live claim, replays and forks). Real PostgreSQL; the reference below is the former code,
kept here verbatim, so a change to ``summary_fields`` that alters the output fails."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from uuid import UUID, uuid4

import asyncpg

from app.server.session_routes import SessionPage
from app.sessions.sql.session_owners import list_visible_records
from app.sessions.sql.session_rows import SessionRow
from app.sessions.summary import SessionSummary, one_line_title, shown_state, summary_fields
from app.store import EventStore
from app.store.session_claims import CLAIM_CLASS


def former_summary(row: SessionRow) -> SessionSummary:
    """``SessionSummary.of`` as it was before the page was validated once."""
    return SessionSummary(
        id=row.session_id,
        created_at=row.created_at,
        updated_at=row.updated_at,
        ended_at=row.ended_at,
        events=row.last_seq,
        title=one_line_title(row.title) if row.title else row.title,
        state=shown_state(row.status, row.claimed),
        reason=row.state_reason,
        agent=row.agent,
        model=row.model,
        runtime=row.runtime,
        workspace=row.workspace,
        steps=row.steps,
        model_calls=row.model_calls,
        failed_calls=row.failed_calls,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cached_tokens=row.cached_tokens,
        cost_usd=float(row.cost_usd) if row.cost_usd is not None else None,
        unpriced_calls=row.unpriced_calls,
        errors=row.errors,
        replay_of=row.replay_of,
        forked_from=row.forked_from,
        evaluation_run=row.evaluation_run,
    )


ROWS: list[dict[str, object]] = [
    {"title": None, "status": None, "cost_usd": None},
    {"title": "  \n\n" + "a very long first line " * 10 + "\nsecond", "status": "finished",
     "cost_usd": Decimal("0.012345678901234567"), "model_calls": 3, "priced_calls": 3},
    {"title": "", "status": "working", "cost_usd": Decimal("1.5"), "model_calls": 4,
     "priced_calls": 2, "unpriced_calls": 2, "replay_of": uuid4(), "evaluation_run": "run-1"},
    {"title": "claimed ünïcode ✓", "status": "working", "cost_usd": None, "model_calls": 2,
     "unpriced_calls": 2, "forked_from": uuid4(), "state_reason": "because",
     "workspace": "/w", "input_tokens": 2**40, "errors": 7},
]  # fmt: skip


async def test_the_page_is_the_json_it_was(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    start = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    ids = []
    for index, row in enumerate(ROWS):
        session = uuid4()
        ids.append(session)
        at = start + timedelta(minutes=index)
        await superuser.execute(
            "INSERT INTO session_state (session_id, title, created_at, updated_at, ended_at, "
            "status, state_reason, agent, model, runtime, workspace, model_calls, priced_calls, "
            "unpriced_calls, input_tokens, cost_usd, errors, last_seq, replay_of, forked_from, "
            "evaluation_run) VALUES ($1, $2, $3, $4, $5, $6, $7, 'codeact', 'openai/x', "
            "'local', $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
            session,
            row["title"],
            at,
            at + timedelta(seconds=1),
            None if row["status"] == "working" else at + timedelta(seconds=2),
            row["status"],
            row.get("state_reason"),
            row.get("workspace"),
            row.get("model_calls", 0),
            row.get("priced_calls", 0),
            row.get("unpriced_calls", 0),
            row.get("input_tokens", 0),
            row["cost_usd"],
            row.get("errors", 0),
            index * 10 + 1,
            row.get("replay_of"),
            row.get("forked_from"),
            row.get("evaluation_run"),
        )
    claimed = ids[3]
    await superuser.execute(
        "SELECT pg_advisory_lock($1::int, hashtext($2::text))", CLAIM_CLASS, str(claimed)
    )
    try:
        records = await list_visible_records(store, owner=None, limit=10)
        cursor = "opaque-cursor"
        former = SessionPage(
            sessions=[former_summary(SessionRow(**dict(record))) for record in records],
            next_cursor=cursor,
        )
        page = SessionPage.model_validate(
            {"sessions": [summary_fields(record) for record in records], "next_cursor": cursor}
        )
    finally:
        await superuser.execute(
            "SELECT pg_advisory_unlock($1::int, hashtext($2::text))", CLAIM_CLASS, str(claimed)
        )
    assert [UUID(str(s.id)) for s in page.sessions] == list(reversed(ids))
    states = {s.id: s.state for s in page.sessions}
    assert states[ids[2]] == "interrupted" and states[claimed] == "running"
    # what Litestar encodes (the pydantic plugin's model_dump(mode="json")), and its bytes
    assert page.model_dump(mode="json") == former.model_dump(mode="json")
    assert page.model_dump_json() == former.model_dump_json()
    # get one session: SessionSummary.of now goes through summary_fields too
    one = SessionRow(**dict(records[0]))
    assert SessionSummary.of(one).model_dump_json() == former_summary(one).model_dump_json()
