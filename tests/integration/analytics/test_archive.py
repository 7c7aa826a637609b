"""Export whole sessions, verify the file offline, import it into a fresh database.

The import must give the very same sessions (event ids, seqs, times, hashes, prompt messages,
blobs) that verify there; a second import changes nothing; a file changed anywhere — an
event's payload, a blob's text, a time, a prompt message — fails `verify --file` naming the
line and the event, and is refused by import with nothing written.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.events import LlmCall, Message, Run, RunOutput, SessionCreated
from app.events.canonical import stored_json
from app.events.stored_form import stored_form
from app.store import EventStore
from app.store.archive import ImportRefused, check_file, export_sessions, import_file
from tests.support.postgres import ServerAddress, database_from_template

LONG_OUTPUT = "line of a long build log\n" * 4000  # ~100 KB: stored as a blob


@pytest.fixture
def other_database_url(pg_address: ServerAddress, pg_template: str) -> Iterator[str]:
    """A second fresh, migrated database, as its owner (superuser): where imports go."""
    yield from database_from_template(pg_address, pg_template, f"t_{uuid.uuid4().hex[:16]}")


@pytest.fixture
async def other_store(other_database_url: str, settings: Settings) -> AsyncIterator[EventStore]:
    async with await EventStore.open(
        other_database_url, config=settings.store, masker=settings.masker()
    ) as opened:
        yield opened


async def _record(store: EventStore) -> list[uuid.UUID]:
    """Two sessions: one with a prompt message, a blob and a text the log escapes."""
    message = {"role": "user", "content": "count the files"}
    text = stored_json(stored_form(message))
    key = hashlib.sha256(text.encode()).hexdigest()
    await store.put_messages([key], [text])
    first, second = uuid.uuid4(), uuid.uuid4()
    await store.append(
        first,
        [
            SessionCreated(title="archived"),
            Message(content="count the files \x00 with a NUL"),
            LlmCall(model="openai/gpt-4o", fingerprint="f" * 64, prompt=[key], cost_usd=0.5),
            Run(command="make"),
        ],
        expected_seq=0,
    )
    await store.append(first, [RunOutput(output=LONG_OUTPUT, exit_code=0, cause=4)], expected_seq=4)
    await store.append(
        second, [SessionCreated(title="short"), Message(content="hi")], expected_seq=0
    )
    return [first, second]


async def _export(store: EventStore, sessions: list[uuid.UUID], path: Path) -> None:
    out = io.StringIO()
    await export_sessions(store, sessions, out)
    await asyncio.to_thread(path.write_text, out.getvalue(), encoding="utf-8", newline="\n")


async def test_export_import_verify_round_trip(
    store: EventStore, other_store: EventStore, tmp_path: Path
) -> None:
    sessions = await _record(store)
    path = tmp_path / "sessions.jsonl"
    await _export(store, sessions, path)

    report = check_file(path)
    assert report.ok, report.reason
    assert [s.session_id for s in report.sessions] == sessions
    assert report.blobs == 1 and report.messages == 1
    # The file holds the whole payload, blob resolved, escapes undone, for readers.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    outputs = [line for line in lines if line.get("kind") == "run.output"]
    assert outputs[0]["payload"]["output"] == LONG_OUTPUT

    imported = await import_file(other_store, path)
    assert (imported.sessions, imported.imported, imported.present) == (2, 7, 0)
    for session in sessions:
        assert (await other_store.verify(session)).ok
        original, copy = await store.read(session), await other_store.read(session)
        assert [(e.event_id, e.seq, e.created_at, e.hash, e.payload) for e in copy] == [
            (e.event_id, e.seq, e.created_at, e.hash, e.payload) for e in original
        ]
    # Idempotent: the second import finds every event present and writes nothing.
    again = await import_file(other_store, path)
    assert (again.imported, again.present) == (0, 7)
    # Exporting the imported copy gives the same bytes.
    copy_path = tmp_path / "copy.jsonl"
    await _export(other_store, sessions, copy_path)
    assert copy_path.read_bytes() == path.read_bytes()


async def test_a_session_that_grew_gets_only_its_new_events(
    store: EventStore, other_store: EventStore, tmp_path: Path
) -> None:
    sessions = await _record(store)
    early = tmp_path / "early.jsonl"
    await _export(store, sessions[1:], early)
    await import_file(other_store, early)
    await store.append(sessions[1], [Message(content="later")], expected_seq=2)
    later = tmp_path / "later.jsonl"
    await _export(store, sessions[1:], later)
    report = await import_file(other_store, later)
    assert (report.imported, report.present) == (1, 2)
    assert (await other_store.verify(sessions[1])).ok


def _tamper(path: Path, wanted: str, change: Callable[[dict[str, Any]], None]) -> tuple[Path, int]:
    """A copy of the file with the first line of ``wanted`` (an event's kind, or the type of
    another line) changed; that line's 1-based number."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for index, text in enumerate(lines):
        line = json.loads(text)
        if line.get("kind") == wanted or (line["type"] != "event" and line["type"] == wanted):
            change(line)
            lines[index] = json.dumps(line, sort_keys=True, separators=(",", ":"))
            tampered = path.with_name("tampered.jsonl")
            tampered.write_text("\n".join(lines) + "\n", encoding="utf-8")
            return tampered, index + 1
    raise AssertionError(f"no {wanted} line")


def _payload(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(line: dict[str, Any]) -> None:
        line["payload"][key] = value

    return change


def _prompt(line: dict[str, Any]) -> None:
    line["message"]["content"] = "count and delete the files"


def _backdate(line: dict[str, Any]) -> None:
    line["created_at"] = "2020-01-01T00:00:00.000000Z"


CHANGED_LOG = LONG_OUTPUT.replace("build", "b0ild", 1)
TAMPERINGS = {
    "an event's text": ("message", _payload("content", "count, and delete them"), "event 2"),
    "a cost": ("llm.call", _payload("cost_usd", 0.0), "event 3"),
    "a command": ("run", _payload("command", "rm -rf /"), "event 4"),
    # The blob's text in the payload: the hash covers the reference, the reference the text.
    "a blob's text": ("run.output", _payload("output", CHANGED_LOG), "event 5"),
    "a time": ("session.created", _backdate, "event 1"),
    "a prompt": ("message", _prompt, "prompt message"),
}  # fmt: skip


@pytest.mark.parametrize("what", sorted(TAMPERINGS))
async def test_a_tampered_file_fails_verification_and_import(
    store: EventStore, other_store: EventStore, tmp_path: Path, what: str
) -> None:
    """Before the checker compared payloads with their stored forms, changing a blob's text
    in the payload passed, since the hash covers only the reference."""
    wanted, change, names = TAMPERINGS[what]
    sessions = await _record(store)
    path = tmp_path / "sessions.jsonl"
    await _export(store, sessions, path)
    if what == "an event's text":  # the event, not the prompt message line before it
        wanted = "message"
        lines = path.read_text(encoding="utf-8").splitlines()
        kinds = [json.loads(text).get("kind") for text in lines]
        number = kinds.index("message") + 1
        line = json.loads(lines[number - 1])
        change(line)
        lines[number - 1] = json.dumps(line, sort_keys=True, separators=(",", ":"))
        tampered = tmp_path / "tampered.jsonl"
        tampered.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        tampered, number = _tamper(path, wanted, change)

    report = check_file(tampered)
    assert not report.ok
    assert report.line == number
    assert names in report.reason

    with pytest.raises(ImportRefused, match=f"line {number}"):
        await import_file(other_store, tampered)
    for session in sessions:
        assert await other_store.last_seq(session) == 0  # nothing of it was written


async def test_an_import_that_contradicts_the_database_is_refused(
    store: EventStore, other_store: EventStore, tmp_path: Path
) -> None:
    """Two databases with different histories of one session: the second file verifies on its
    own, but the database holds other events at those seqs."""
    sessions = await _record(store)
    path = tmp_path / "sessions.jsonl"
    await _export(store, sessions[1:], path)
    await other_store.append(sessions[1], [SessionCreated(title="another history")], expected_seq=0)
    with pytest.raises(ImportRefused, match="another event at seq 1"):
        await import_file(other_store, path)


async def test_the_application_login_cannot_import(store: EventStore, tmp_path: Path) -> None:
    """Importing writes events with the times they were recorded: the application's login,
    which may not backdate the log, is refused."""
    sessions = await _record(store)
    path = tmp_path / "sessions.jsonl"
    await _export(store, sessions, path)
    with pytest.raises(ImportRefused, match="only the owner"):
        await import_file(store, path)
