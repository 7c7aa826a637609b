"""`chronicle archive` and the months of ``events``: a month is detached only when every
session with events in it is archived; the archived sessions' heads outlive their month (so
`verify` reports them archived, not tampered); each detached month is in the audit log; and
the archive brings the sessions back into the very database it came from.

Sessions get last month's events the way an old session comes back (tests/support/months.py:
imported with the times they were recorded).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.events import AgentState, LlmCall, Message, SessionCreated
from app.events.platform_audit import PLATFORM_LOG_ID
from app.sessions.archiving import (
    ArchiveOutcome,
    ArchiveRefused,
    ArchiveRequest,
    archive_sessions,
)
from app.sessions.platform_audit import Actor
from app.store import EventStore
from app.store.analytics import refresh_usage_rollups
from app.store.archive import ArchiveRaceError, check_directory, import_file
from app.store.integrity import sign_anchor
from app.store.partitions import current_month, list_partitions
from tests.support.months import import_last_month

ACTOR = Actor(name="cli:operator", via="cli")


def _last_month_name() -> str:
    start = current_month() - timedelta(days=1)
    return f"events_{start.year:04d}_{start.month:02d}"


async def _old_session(superuser: asyncpg.Connection, state: str, *calls: LlmCall) -> uuid.UUID:
    session = uuid.uuid4()
    await import_last_month(
        superuser,
        session,
        [SessionCreated(title=state), Message(content="do it"), *calls, AgentState(state=state)],
    )
    return session


USAGE = (
    "SELECT (SELECT llm_calls || ' ' || cost_usd FROM session_costs WHERE session_id = $1), "
    "(SELECT sum(llm_calls) || ' ' || sum(cost_usd) FROM daily_usage)"
)


async def _run(store: EventStore, directory: Path, before: datetime) -> ArchiveOutcome | None:
    request = ArchiveRequest(before=before, directory=directory, actor=ACTOR)
    said: list[str] = []
    return await archive_sessions(
        store, request, KEY, lambda text, *, steady=False: said.append(text)
    )


KEY = Ed25519PrivateKey.generate()


async def test_a_month_goes_only_when_all_its_sessions_are_archived(
    superuser: asyncpg.Connection, owner_store: EventStore, store: EventStore, tmp_path: Path
) -> None:
    call = LlmCall(model="openai/gpt-4o", fingerprint="f" * 64, latency_ms=900.0, cost_usd=0.75)
    first, second = (
        await _old_session(superuser, "finished", call),
        await _old_session(superuser, "error"),
    )
    usage = tuple(await superuser.fetchrow(USAGE, first))
    assert usage == ("1 0.75", "1 0.75")  # nothing counted into the rollups yet
    going_on = await _old_session(superuser, "running")  # cut short: interrupted, not ended
    month = _last_month_name()
    start_of_month = datetime.combine(current_month(), datetime.min.time(), tzinfo=UTC)

    early = await _run(owner_store, tmp_path / "early", start_of_month)
    assert early is not None
    assert early.sessions == 2 and {s for s, _ in early.not_ended} == {going_on}
    [kept] = [m for m in early.detaching.months if m.partition == month]
    assert not kept.detach and f"session {going_on} has events in it" in kept.reason
    assert early.detached == []
    assert month in {p.name for p in await list_partitions(superuser)}

    # the third ends now: archived by a later run, and then its month goes
    await store.append(going_on, [AgentState(state="finished")])
    late = await _run(owner_store, tmp_path / "late", datetime.now(UTC))
    assert late is not None and late.sessions == 1 and late.detached == [month]
    verdicts = {m.partition: m for m in late.detaching.months}
    assert not verdicts[f"events_{current_month():%Y_%m}"].detach  # this month has not ended
    assert month not in {p.name for p in await list_partitions(superuser)}
    # its model call outlives it in the usage views: counted before the month went
    assert tuple(await superuser.fetchrow(USAGE, first)) == usage

    # the heads outlive their month: archived, not tampered
    for session in (first, second):
        report = await store.verify(session)
        assert report.ok, report.reason
        assert report.archived is not None and report.archived.events_here == 0
        assert report.archived.archived_to == str(tmp_path / "early")
    partly = await store.verify(going_on)
    assert partly.ok and partly.archived is not None
    assert (partly.archived.events, partly.archived.events_here) == (4, 1)

    # the detached month is explained in the audit log
    audit = await store.read(PLATFORM_LOG_ID)
    detached = [e.payload for e in audit if e.kind == "audit.partition_detached"]
    assert [(d["partition"], d["archived_to"]) for d in detached] == [
        (month, str(tmp_path / "late"))
    ]
    assert len([e for e in audit if e.kind == "audit.sessions_archived"]) == 2

    # and the archives still prove themselves, and bring the sessions back here
    assert check_directory(tmp_path / "early", KEY.public_key()).ok
    restored = await import_file(owner_store, tmp_path / "early" / "sessions.jsonl")
    assert (restored.sessions, restored.imported) == (2, 7)
    back = await store.verify(first)
    assert back.ok and back.archived is None and back.checked == 4
    # and counted once, though its events came back with new places in the log
    await refresh_usage_rollups(store)
    assert tuple(await superuser.fetchrow(USAGE, first)) == usage
    assert month in {p.name for p in await list_partitions(superuser)}


async def test_the_operators_anchors_are_checked_before_anything_is_written(
    superuser: asyncpg.Connection, owner_store: EventStore, store: EventStore, tmp_path: Path
) -> None:
    session = await _old_session(superuser, "finished")
    [last] = await store.read(session, after_seq=2)
    operator = Ed25519PrivateKey.generate()
    now = datetime.now(UTC)

    forged = sign_anchor(operator, session, 3, b"\x02" * 32)
    refused = ArchiveRequest(
        before=now, directory=tmp_path / "refused", actor=ACTOR, earlier_anchors={session: [forged]}
    )
    with pytest.raises(ArchiveRefused, match="does not verify against the anchors file"):
        await archive_sessions(
            owner_store, refused, KEY, lambda text, *, steady=False: None,
            anchors_key=operator.public_key(),
        )  # fmt: skip
    assert not (tmp_path / "refused").exists()
    left = await asyncio.to_thread(lambda: [p.name for p in tmp_path.iterdir()])
    assert not [name for name in left if name.startswith(".refused")]
    assert (await store.verify(session)).archived is None

    good = sign_anchor(operator, session, 3, last.hash)
    request = ArchiveRequest(
        before=now, directory=tmp_path / "good", actor=ACTOR, earlier_anchors={session: [good]}
    )
    outcome = await archive_sessions(
        owner_store, request, KEY, lambda text, *, steady=False: None,
        anchors_key=operator.public_key(),
    )  # fmt: skip
    assert outcome is not None and outcome.sessions == 1
    manifest = json.loads((tmp_path / "good" / "manifest.json").read_text())
    assert manifest["sessions"][0]["checked_against"]["signature"] == good.signature


async def test_a_session_that_takes_a_message_while_it_is_archived_is_not(
    superuser: asyncpg.Connection, database_url: str, store: EventStore, owner_store: EventStore,
    tmp_path: Path,
) -> None:  # fmt: skip
    session = await _old_session(superuser, "finished")

    def message_meanwhile(text: str, *, steady: bool = False) -> None:
        """Right after the sessions are chosen, the user writes to this one."""
        if text.startswith("writing"):
            with psycopg.connect(database_url, autocommit=True) as user:
                user.execute(
                    "SELECT seq FROM chronicle_append_one(%s, NULL, %s, 'message', 'user', "
                    'NULL, \'{"content":"one more thing"}\', 1::smallint)',
                    (session, uuid.uuid4()),
                )

    request = ArchiveRequest(before=datetime.now(UTC), directory=tmp_path / "raced", actor=ACTOR)
    with pytest.raises(ArchiveRaceError, match=f"session {session} grew"):
        await archive_sessions(owner_store, request, KEY, message_meanwhile)
    assert not await asyncio.to_thread((tmp_path / "raced").exists)
    assert (await store.verify(session)).archived is None
    await store.append(session, [AgentState(state="running")])  # it goes on
