"""Migration 0029: the chain covers each payload's tree commitment (app/events/chain.py), so a
part of a payload can be replaced by its redaction marker and the chain still verifies, while
any other change is still caught. Events appended before it keep their hashes (chain 1) and a
session goes on across the upgrade with both; the database and Python agree on the commitment
of payloads built to be awkward (escapes, reserved keys, numbers, blobs)."""

from __future__ import annotations

import hashlib
import json
import uuid

import asyncpg
import pytest

from app.config import Settings
from app.events import LlmCall, Message, Run, RunOutput, SessionCreated
from app.events.canonical import canonical_json
from app.events.commitment import RedactionPathError, redact
from app.events.stored_form import references
from app.store import EventStore, RedactionRefused, migrate
from app.store.value_search import redact_value
from tests.support.postgres import ServerAddress, database_from_template


def awkward() -> list[Message | Run | RunOutput]:
    """Four events for seqs 4 to 7 of a session: the output answers the run at 5."""
    return [
        Message(content="nul \x00 and a lone surrogate \udce9 and emoji \U0001f600"),
        Run(command='echo "quotes" \\ backslash\ttab\nnewline'),
        RunOutput(cause=5, output="x" * 200_000, exit_code=0),  # a blob
        Message(content="\u2028\u2029 and \x7f and é composed e\u0301"),
    ]


async def _chains(store: EventStore, session: uuid.UUID) -> list[int | None]:
    events = await store.read(session, resolve_blobs=False)
    previous, found = b"", []
    for event in events:
        found.append(event.chain(previous))
        previous = event.hash
    return found


@pytest.mark.usefixtures("role_settings_changing")
async def test_a_session_goes_on_across_the_upgrade_with_both_chains(
    pg_address: ServerAddress, settings: Settings
) -> None:
    for url in database_from_template(pg_address, "template1", f"c_{uuid.uuid4().hex[:12]}"):
        migrate.upgrade(url, "0028")
        session = uuid.uuid4()
        async with await EventStore.open(
            url, config=settings.store, masker=settings.masker()
        ) as store:
            await store.append(session, [SessionCreated(title="before"), Run(command="ls")])
            assert await _chains(store, session) == [1, 1]

        migrate.upgrade(url)

        async with await EventStore.open(
            url, config=settings.store, masker=settings.masker()
        ) as store:
            await store.append(session, [RunOutput(cause=2, output="a\n", exit_code=0)])
            await store.append(session, awkward())
            assert await _chains(store, session) == [1, 1, 2, 2, 2, 2, 2]
            report = await store.verify(session)
            assert report.ok, report

        migrate.downgrade(url, "0028")  # the functions before: chain 1 again
        async with await EventStore.open(
            url, config=settings.store, masker=settings.masker()
        ) as store:
            await store.append(session, [Message(content="after the downgrade")])
            chains = await _chains(store, session)
            # every event still links to the one before (verify itself needs the newest schema)
            assert chains[-1] == 1 and None not in chains


async def test_a_part_replaced_by_its_marker_keeps_the_chain_anything_else_breaks_it(
    store: EventStore, database_url: str
) -> None:
    session = uuid.uuid4()
    secret = "the password is hunter2"
    await store.append(
        session,
        [SessionCreated(title="t"), Run(command=f"echo '{secret}'")],
    )
    await store.append(session, [RunOutput(cause=2, output=f"{secret}\n", exit_code=0)])
    await store.append(session, awkward())
    assert set(await _chains(store, session)) == {2}
    [output] = [e for e in await store.read(session, resolve_blobs=False) if e.seq == 3]
    redacted, gone = redact(output.stored_payload, "/output", output.event_id.bytes)
    removed = gone["$redacted"]

    admin = await asyncpg.connect(database_url)  # the server's superuser
    try:
        # behind the log's back, as a superuser (the app's role cannot change a row)
        await admin.execute("SET session_replication_role = replica")
        change = "UPDATE events SET payload = $3::jsonb WHERE session_id = $1 AND seq = $2"
        await admin.execute(change, session, 3, json.dumps(redacted))
        # the chain holds (the marker keeps the commitment of what went), but no redaction
        # event records it: verify reports the removal as tampering, not as a redaction
        assert set(await _chains(store, session)) == {2}
        report = await store.verify(session)
        assert not report.ok and report.first_bad_seq == 3, report
        assert "no redaction event recording it" in report.reason
        after = {e.seq: e for e in await store.read(session, resolve_blobs=False)}[3]
        assert secret not in json.dumps(after.payload) and removed in json.dumps(after.payload)

        forged = dict(redacted, exit_code=1)
        await admin.execute(change, session, 3, json.dumps(forged))
        report = await store.verify(session)
        assert not report.ok and report.first_bad_seq == 3, report
        wrong = dict(redacted, output={"$redacted": "0" * 64, "was": "string"})
        await admin.execute(change, session, 3, json.dumps(wrong))
        report = await store.verify(session)
        assert not report.ok and report.first_bad_seq == 3, report
    finally:
        await admin.close()


async def test_a_redaction_removes_the_content_and_verify_reports_it(
    store: EventStore, database_url: str
) -> None:
    session = uuid.uuid4()
    secret = "sk-live-0123456789abcdef"
    await store.append(
        session,
        [SessionCreated(title="t"), Run(command=f"export KEY={secret}")],
    )
    await store.append(session, [RunOutput(cause=2, output=f"KEY={secret}\n", exit_code=0)])
    [record] = await store.redact(session, 2, "/command", reason="a pasted key", user="alice")
    assert record.seq == 4 and record.kind == "redaction"
    await store.redact(session, 3, "", reason="its output too", user="alice")

    report = await store.verify(session)
    assert report.ok, report
    assert [(n.seq, n.path, n.by, n.reason) for n in report.redactions] == [
        (2, "/command", "alice", "a pasted key"),
        (3, "", "alice", "its output too"),
    ]
    events = await store.read(session)
    assert events[1].event().command == "[redacted]"  # type: ignore[attr-defined]
    admin = await asyncpg.connect(database_url)
    try:
        dump = await admin.fetchval("SELECT string_agg(payload::text, ' ') FROM events")
        assert secret not in dump
        # a redaction without its record is tampering; so is content put back after one
        await admin.execute("SET session_replication_role = replica")
        await admin.execute("DELETE FROM events WHERE session_id = $1 AND seq = 5", session)
        await admin.execute(
            "UPDATE sessions SET last_seq = 4, last_hash = "
            "(SELECT hash FROM events WHERE session_id = $1 AND seq = 4) "
            "WHERE id = $1",
            session,
        )
        report = await store.verify(session)
        assert not report.ok and report.first_bad_seq == 3, report
        assert "no redaction event recording it" in report.reason
    finally:
        await admin.close()


async def test_what_a_redaction_refuses(store: EventStore, database_url: str) -> None:
    session = uuid.uuid4()
    await store.append(session, [SessionCreated(title="t"), Run(command="ls")])
    with pytest.raises(RedactionPathError, match="nothing at /nope"):
        await store.redact(session, 2, "/nope", reason="r", user="u")
    with pytest.raises(RedactionRefused, match="has no event 9"):
        await store.redact(session, 9, "", reason="r", user="u")
    await store.redact(session, 2, "/command", reason="r", user="u")
    with pytest.raises(RedactionPathError, match="already redacted"):
        await store.redact(session, 2, "/command", reason="r", user="u")
    change = "UPDATE events SET {} WHERE session_id = $1 AND seq = $2"
    named = "SELECT set_config('chronicle.redacting', $1, true)"
    async with store.pool.acquire() as connection, connection.transaction():
        await connection.execute(named, f"{session}:2")
        with pytest.raises(asyncpg.PostgresError, match="permission denied"):  # the app's role
            await connection.execute(change.format("payload = '{}'"), session, 2)
    admin = await asyncpg.connect(database_url)
    try:  # the trigger lets the named row's payload change, nothing else, even for its owner
        for what, seq in (("payload = '{}'", 1), ("hash = '\\x00'", 2), ("cause = 1", 2)):
            with pytest.raises(asyncpg.PostgresError, match="append-only"):
                async with admin.transaction():
                    await admin.execute(named, f"{session}:2")
                    await admin.execute(change.format(what), session, seq)
    finally:
        await admin.close()


async def test_a_blob_goes_from_every_event_that_names_it(
    store: EventStore, database_url: str
) -> None:
    """Two sessions printed the same long output (one blob): redacting it in one redacts the
    other's reference too, each with its record, and the blob itself is deleted."""
    secret = "password=hunter2-" + "y" * 100_000
    sessions = [uuid.uuid4(), uuid.uuid4()]
    for session in sessions:
        await store.append(session, [SessionCreated(title="t"), Run(command="cat cfg")])
        await store.append(session, [RunOutput(cause=2, output=secret, exit_code=0)])
    events = await store.read(sessions[0], resolve_blobs=False)
    [key] = {k for e in events for k in references(e.stored_payload)}

    records = await store.redact(sessions[0], 3, "/output", reason="a password", user="ops")
    assert [(r.session_id, r.payload["target_seq"]) for r in records] == [
        (sessions[0], 3),
        (sessions[1], 3),
    ]
    assert "the same blob" in records[1].payload["reason"]
    for session in sessions:
        report = await store.verify(session)
        assert report.ok and [(n.seq, n.path) for n in report.redactions] == [(3, "/output")]
    admin = await asyncpg.connect(database_url)
    try:
        assert (
            await admin.fetchval("SELECT count(*) FROM blobs WHERE sha256 = $1", bytes.fromhex(key))
            == 0
        )
        for table in ("events", "blobs", "llm_messages"):
            dump = await admin.fetchval(
                f"SELECT coalesce(string_agg(t::text, ' '), '') FROM {table} t"
            )
            assert "hunter2" not in dump, table
    finally:
        await admin.close()


async def test_a_prompt_message_goes_from_every_call_that_sent_it(
    store: EventStore, database_url: str
) -> None:
    system = canonical_json({"role": "system", "content": "be careful"})
    leaked = canonical_json({"role": "tool", "content": "AWS_SECRET=abc123xyz"})
    hashes = [hashlib.sha256(t.encode()).hexdigest() for t in (system, leaked)]
    await store.put_messages(hashes, [system, leaked])
    sessions = [uuid.uuid4(), uuid.uuid4()]
    for session in sessions:  # a fork sends the same messages
        call = LlmCall(model="m", fingerprint="f" * 64, prompt=hashes, tools=hashes[0])
        await store.append(session, [Message(content="go"), call])

    records = await store.redact(sessions[1], 2, "/prompt/1", reason="a key", user="ops")
    assert [(r.session_id, r.payload["path"]) for r in records] == [
        (sessions[1], "/prompt/1"),
        (sessions[0], "/prompt/1"),
    ]
    for session in sessions:
        report = await store.verify(session)
        assert report.ok and report.messages == 1, report  # the system prompt is still there
    admin = await asyncpg.connect(database_url)
    try:
        dump = await admin.fetchval("SELECT string_agg(t::text, ' ') FROM llm_messages t")
        assert "abc123xyz" not in dump and "be careful" in dump
    finally:
        await admin.close()


async def test_a_secret_is_found_and_redacted_everywhere(
    store: EventStore, database_url: str
) -> None:
    """``redact_value``: in commands, outputs, escaped strings, blobs and prompt messages, in
    every session, then nothing in the tables holds it and every session still verifies."""
    secret = 'ghp_"Quoted\\Secret\x00Value'  # a quote, a backslash and a NUL: escaped forms
    tool = canonical_json({"role": "tool", "content": f"token: {secret}"})
    hashes = [hashlib.sha256(tool.encode()).hexdigest()]
    await store.put_messages(hashes, [tool])
    first, second = uuid.uuid4(), uuid.uuid4()
    await store.append(first, [SessionCreated(title="t"), Run(command=f"gh auth {secret}")])
    await store.append(first, [RunOutput(cause=2, output=f"ok {secret}\n", exit_code=0)])
    await store.append(first, [LlmCall(model="m", fingerprint="f" * 64, prompt=hashes)])
    await store.append(second, [SessionCreated(title="u"), Run(command="cat log")])
    long = "line\n" * 20_000 + secret
    await store.append(second, [RunOutput(cause=2, output=long, exit_code=0)])

    found = await redact_value(store, secret, sessions=None, reason="leaked", user="ops")
    records = found.records
    assert found.kept == []  # no session is archived
    assert {(r.session_id, r.payload["target_seq"], r.payload["path"]) for r in records} == {
        (first, 2, "/command"),
        (first, 3, "/output"),
        (first, 4, "/prompt/0"),
        (second, 3, "/output"),
    }
    for session in (first, second):
        report = await store.verify(session)
        assert report.ok, report
    admin = await asyncpg.connect(database_url)
    try:
        for table in ("events", "blobs", "llm_messages"):
            dump = await admin.fetchval(
                f"SELECT coalesce(string_agg(t::text, ' '), '') FROM {table} t"
            )
            assert "Quoted" not in dump, table
    finally:
        await admin.close()
