"""Export files and archive directories made without a database, hashed as the database
hashes (chain 2 by default, chain 1 for an event recorded before 0029), for tests of what
reads or rewrites them."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.events.canonical import chain_hash, encode, hashed_document, stored_json
from app.events.chain import link
from app.events.stored_form import stored_form
from app.store.archive import (
    ANCHORS,
    EVENTS_PARQUET,
    MANIFEST,
    MANIFEST_SIGNATURE,
    MESSAGES_PARQUET,
    SESSION_STATE_PARQUET,
    SESSIONS_JSONL,
    SESSIONS_PARQUET,
    ArchivedSession,
    ArchiveManifest,
    check_file,
    described,
    sign_manifest,
    write_parquet_tables,
)
from app.store.archive.lines import EventLine, HeaderLine, MessageLine, SessionLine, dump_line
from app.store.integrity import key_id, sign_anchor

#: The smallest blob threshold (bytes): a longer string of a payload is stored as a blob.
BLOB_BYTES = 1024
START = datetime(2026, 3, 1, 12, tzinfo=UTC)


def message_key(message: Any) -> str:
    return hashlib.sha256(stored_json(stored_form(message)).encode()).hexdigest()


@dataclass
class SessionBlock:
    """One session's lines: add events (and the messages they name) in order."""

    session_id: uuid.UUID = field(default_factory=uuid.uuid4)
    lines: list[Any] = field(default_factory=list)
    head: bytes = b""
    seq: int = 0

    def message(self, message: Any) -> str:
        key = message_key(message)
        self.lines.append(MessageLine(hash=key, message=stored_form(message)))
        return key

    def event(self, kind: str, payload: dict[str, Any], *, chain: int = 2) -> EventLine:
        self.seq += 1
        event_id = uuid.uuid4()
        created = START + timedelta(seconds=self.seq)
        stored = encode(payload, blob_threshold=BLOB_BYTES).stored
        fields = {
            "session_id": str(self.session_id),
            "seq": self.seq,
            "event_id": str(event_id),
            "kind": kind,
            "source": "agent",
            "cause": None,
            "payload": stored,
            "schema_version": 1,
            "created_at": created,
        }
        if chain == 2:
            self.head = link(self.head, **fields)
        else:
            self.head = chain_hash(self.head, hashed_document(**fields))
        line = EventLine(
            session_id=self.session_id,
            seq=self.seq,
            event_id=event_id,
            created_at=created.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            kind=kind,
            source="agent",
            cause=None,
            schema_version=1,
            payload=payload,
            stored_payload=None if stored == payload else stored,
            hash=self.head.hex(),
        )
        self.lines.append(line)
        return line

    def all_lines(self) -> list[Any]:
        return [SessionLine(session_id=self.session_id, events=self.seq, head=self.head.hex()),
                *self.lines]  # fmt: skip


def write_export(path: Path, *blocks: SessionBlock) -> Path:
    """The sessions as an export file, which must verify."""
    lines = [HeaderLine(), *(line for block in blocks for line in block.all_lines())]
    path.write_text("".join(dump_line(line) + "\n" for line in lines), encoding="utf-8")
    report = check_file(path)
    assert report.ok, report.reason
    return path


def write_archive(
    directory: Path, key: Ed25519PrivateKey, *blocks: SessionBlock, titles: dict[str, str]
) -> Path:
    """The sessions as a ``chronicle archive`` directory signed with ``key``; ``titles``
    (session id -> title) its session_state.parquet."""
    import pyarrow
    import pyarrow.parquet

    directory.mkdir()
    write_export(directory / SESSIONS_JSONL, *blocks)
    anchors = {
        block.session_id: sign_anchor(key, block.session_id, block.seq, block.head, START)
        for block in blocks
    }
    (directory / ANCHORS).write_text("".join(r.to_line() + "\n" for r in anchors.values()))
    names = {
        "events": EVENTS_PARQUET,
        "sessions": SESSIONS_PARQUET,
        "llm_messages": MESSAGES_PARQUET,
    }
    tables = write_parquet_tables(directory / SESSIONS_JSONL, directory, names)
    state = pyarrow.table({"session_id": list(titles), "title": list(titles.values())})
    pyarrow.parquet.write_table(state, str(directory / SESSION_STATE_PARQUET))
    rows = {**{names[t]: n for t, n in tables.rows.items()}, SESSION_STATE_PARQUET: len(titles)}
    files = {
        name: described(directory / name, rows.get(name))
        for name in (SESSIONS_JSONL, ANCHORS, *rows)
    }
    manifest = ArchiveManifest(
        before=START + timedelta(days=1),
        archived_at=START + timedelta(days=1),
        archived_by="cli:tester",
        key_id=key_id(key.public_key()),
        sessions=[
            ArchivedSession(
                session_id=block.session_id,
                events=block.seq,
                head=block.head.hex(),
                first_event_at=tables.times[block.session_id][0],
                last_event_at=tables.times[block.session_id][1],
                anchor=anchors[block.session_id],
            )
            for block in blocks
        ],
        events=sum(block.seq for block in blocks),
        files=files,
    )
    text = manifest.text()
    (directory / MANIFEST).write_bytes(text)
    (directory / MANIFEST_SIGNATURE).write_bytes(sign_manifest(key, text))
    return directory
