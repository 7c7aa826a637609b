"""An event appended before migration 0029 (chain 1, hashed over its payload's text) can be
redacted whole, and only whole: its hash is then taken as given (every later hash still links
to it), ``verify`` accepts it only with its ``redaction`` record and says that such a
redaction proves the event's place, not what was removed; anything else done to such an event
is still tampering. The same holds for an export file (``verify --file``) and its import.

One database, made at 0028 with chain-1 events in several sessions and upgraded, serves every
test here; each test uses sessions of its own."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from app.config import Settings
from app.events import Message, Run, RunOutput, SessionCreated
from app.events.canonical import canonical_json, stored_json
from app.events.commitment import redact
from app.events.redaction import Redaction
from app.store import EventStore, RedactionRefused, migrate
from app.store.archive import check_file, export_sessions, import_file, mark_archived
from app.store.archive import loader as archive_loader
from app.store.redaction import REDACT_SQL
from app.store.value_search import redact_value
from tests.support.postgres import ServerAddress, database_from_template, role_settings_held

SECRET = "correct-horse-battery-staple-42"
#: Sessions by what each test does with them.
NAMES = ("redacted", "unrecorded", "other_digest", "forged_chain_2", "exported", "searched")


@dataclass
class Upgraded:
    url: str
    settings: Settings
    sessions: dict[str, uuid.UUID]


def _chain_one(name: str) -> list[SessionCreated | Run | RunOutput]:
    events: list[SessionCreated | Run | RunOutput] = [
        SessionCreated(title=name),
        Run(command=f"echo {SECRET}"),
    ]
    if name == "searched":  # a long output: a blob, named by a chain-1 event
        events.append(RunOutput(cause=2, output="log\n" * 20_000 + SECRET, exit_code=0))
    return events


async def _append(upgraded: Upgraded, chain: int) -> None:
    async with await _open(upgraded) as store:
        for name, session in upgraded.sessions.items():
            if chain == 1:
                await store.append(session, _chain_one(name))
            elif name == "searched":
                await store.append(session, [Message(content=f"it was {SECRET}")])
            else:
                await store.append(session, [RunOutput(cause=2, output="ok\n", exit_code=0)])
                await store.append(session, [Message(content="after the upgrade")])


async def _open(upgraded: Upgraded) -> EventStore:
    return await EventStore.open(
        upgraded.url, config=upgraded.settings.store, masker=upgraded.settings.masker()
    )


@pytest.fixture(scope="module")
def upgraded(
    pg_address: ServerAddress, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Upgraded]:
    name = f"c1_{uuid.uuid4().hex[:12]}"
    for url in database_from_template(pg_address, "template1", name):
        with role_settings_held(pg_address, changing=True):
            migrate.upgrade(url, "0028")
        settings = Settings(data_dir=tmp_path_factory.mktemp("data"), poll_interval=0.5)
        state = Upgraded(url, settings, {name: uuid.uuid4() for name in NAMES})
        asyncio.run(_append(state, chain=1))
        migrate.upgrade(url)
        asyncio.run(_append(state, chain=2))
        yield state


async def _redact_sql(
    store: EventStore, session: uuid.UUID, payload: object, record: dict[str, object]
) -> None:
    """``chronicle_redact`` called as it is, with what the caller sends."""
    await store.pool.fetchrow(
        REDACT_SQL, session, 2, stored_json(payload), uuid.uuid4(), canonical_json(record), 1
    )


async def test_a_chain_one_event_goes_whole_and_verify_says_what_that_proves(
    upgraded: Upgraded,
) -> None:
    session = upgraded.sessions["redacted"]
    async with await _open(upgraded) as store:
        with pytest.raises(RedactionRefused, match=r"only the whole payload.*omit --field"):
            await store.redact(session, 2, "/command", reason="r", user="u")
        [run] = await store.read(session, after_seq=1, limit=1, resolve_blobs=False)
        part, _ = redact(run.stored_payload, "/command", run.event_id.bytes)
        whole, marker = redact(run.stored_payload, "", run.event_id.bytes)
        record = {"target_seq": 2, "path": "", "removed": marker["$redacted"], "was": "object",
                  "reason": "r", "user": "u"}  # fmt: skip
        # the database checks it too, whatever the caller sends
        for payload, recorded, refused in (
            (part, record, "only its whole payload can be redacted"),
            (whole, {**record, "path": "/command"}, "does not name its whole"),
            (whole, {**record, "removed": "0" * 64}, "does not name its whole"),
        ):
            with pytest.raises(asyncpg.PostgresError, match=refused):
                await _redact_sql(store, session, payload, recorded)

        [done] = await store.redact(session, 2, "", reason="a pasted secret", user="alice")
        assert done.seq == 5 and done.payload["path"] == "" and done.payload["was"] == "object"
        await store.redact(session, 4, "/content", reason="chain 2", user="alice")
        report = await store.verify(session)
        assert report.ok, report
        assert [(n.seq, n.path, n.proof) for n in report.redactions] == [
            (2, "", "place"),
            (4, "/content", "content"),
        ]
        assert "proves its place, not what was removed" in report.redactions[0].describe()
        assert SECRET not in json.dumps([e.payload for e in await store.read(session)])
        with pytest.raises(asyncpg.PostgresError, match="does not match its hash"):
            await _redact_sql(store, session, whole, record)  # once is all


async def test_anything_else_done_to_a_chain_one_event_is_tampering(
    upgraded: Upgraded,
) -> None:
    sessions = upgraded.sessions
    change = "UPDATE events SET payload = $3::jsonb WHERE session_id = $1 AND seq = $2"
    async with await _open(upgraded) as store:
        admin = await asyncpg.connect(upgraded.url)
        try:
            await admin.execute("SET session_replication_role = replica")
            # a part, or the whole payload with no record: behind the log's back
            session = sessions["unrecorded"]
            [run] = await store.read(session, after_seq=1, limit=1, resolve_blobs=False)
            for path, said in (("/command", "does not match its hash"), ("", "no redaction event")):
                payload, _ = redact(run.stored_payload, path, run.event_id.bytes)
                await admin.execute(change, session, 2, json.dumps(payload))
                report = await store.verify(session)
                assert not report.ok and report.first_bad_seq == 2, report
                assert said in report.reason

            # recorded, but the marker no longer holds the digest its record names
            session = sessions["other_digest"]
            await store.redact(session, 2, "", reason="r", user="u")
            other = {"$redacted": "1" * 64, "was": "object"}
            await admin.execute(change, session, 2, json.dumps(other))
            report = await store.verify(session)
            assert not report.ok and report.first_bad_seq == 2, report
            assert "is not what redaction event 5 records" in report.reason

            # a chain-2 event made a whole marker with a record: its hash still says no
            session = sessions["forged_chain_2"]
            [message] = await store.read(session, after_seq=3, limit=1, resolve_blobs=False)
            assert message.kind == "message"
            await admin.execute(change, session, 4, json.dumps(other))
            forged = Redaction(target_seq=4, removed="1" * 64, was="object", reason="r", user="u")
            await store.append(session, [forged])
            report = await store.verify(session)
            assert not report.ok and report.first_bad_seq == 4, report
            assert "does not match its hash" in report.reason
        finally:
            await admin.close()


async def test_an_export_holding_one_verifies_and_imports(
    upgraded: Upgraded, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = upgraded.sessions["exported"]
    path = tmp_path / "export.jsonl"
    async with await _open(upgraded) as store:
        await store.redact(session, 2, "", reason="before the upgrade", user="u")
        with path.open("w", encoding="utf-8") as out:
            written = await export_sessions(store, [session], out)
        # archived with it: the database's events, checked against the archived head
        [last] = await store.read(session, after_seq=4)
        await mark_archived(store, {session: (last.seq, last.hash)}, archived_at=datetime.now(UTC),
                            archived_by="t", archived_to=str(tmp_path), manifest_sha256=b"\0" * 32,
                            before_commit=lambda: None)  # fmt: skip
        report = await store.verify(session)
        assert report.ok and report.archived is not None, report
        assert [(n.seq, n.proof) for n in report.redactions] == [(2, "place")]
    assert written.ok and check_file(path).ok

    lines = path.read_text(encoding="utf-8").splitlines()
    changed = json.loads(lines[3])  # header, session, events 1 and 2
    assert changed["seq"] == 2 and changed["payload"] == {}
    changed["stored_payload"] = {"$redacted": "2" * 64, "was": "object"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:3], json.dumps(changed), *lines[4:]]) + "\n")
    report = check_file(bad)
    assert not report.ok and report.line == 7, report  # the record: seq 5
    assert "records another digest than event 2's payload holds" in report.reason
    unrecorded = tmp_path / "unrecorded.jsonl"
    head = json.loads(lines[1])
    head.update(events=4, head=json.loads(lines[5])["hash"])
    unrecorded.write_text("\n".join([lines[0], json.dumps(head), *lines[2:6]]) + "\n")
    report = check_file(unrecorded)
    assert not report.ok and report.line == 4, report
    assert "no redaction event of the session records" in report.reason

    monkeypatch.setattr(archive_loader, "EVENTS_PER_CALL", 2)  # the record in a later call
    async with await EventStore.open(
        database_url, config=upgraded.settings.store, masker=upgraded.settings.masker()
    ) as fresh:
        imported = await import_file(fresh, path)
        assert imported.imported == 5
        report = await fresh.verify(session)
        assert report.ok, report
        assert [(n.seq, n.proof) for n in report.redactions] == [(2, "place")]


async def test_the_value_search_takes_a_chain_one_events_whole_payload(
    upgraded: Upgraded,
) -> None:
    session = upgraded.sessions["searched"]
    async with await _open(upgraded) as store:
        found = await redact_value(store, SECRET, sessions=[session], reason="leaked", user="ops")
        records = {r.payload["target_seq"]: r.payload for r in found.records}
        assert {seq: record["path"] for seq, record in records.items()} == {
            2: "",  # the command, a chain-1 event's part
            3: "",  # the blob's reference, in a chain-1 event
            4: "/content",
        }
        assert "the whole payload, in place of /command" in records[2]["reason"]
        assert "the whole payload, in place of /output" in records[3]["reason"]
        report = await store.verify(session)
        assert report.ok, report
        assert [(n.seq, n.proof) for n in report.redactions] == [
            (2, "place"),
            (3, "place"),
            (4, "content"),
        ]
        admin = await asyncpg.connect(upgraded.url)
        try:
            for sql in (  # the other sessions keep theirs
                "SELECT string_agg(payload::text, ' ') FROM events WHERE session_id = $1",
                "SELECT string_agg(content, ' ') FROM blobs WHERE $1::uuid IS NOT NULL",
            ):
                assert SECRET not in (await admin.fetchval(sql, session) or ""), sql
        finally:
            await admin.close()
