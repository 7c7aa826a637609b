"""``chronicle archive --before DATE -o DIR``: write the sessions that ended before DATE to an
archive directory, prove it, record it, then let go of the months they filled.

The order is what makes it safe to remove anything:

1. the sessions that ended before DATE (app/sessions/sql/archive_candidates.py says what
   "ended" means) are chosen;
2. everything is written into a temporary directory beside DIR: the JSONL (the export
   format; each line is checked as it is written), a signed anchor per session (checked
   first against the operator's anchors file, when one is given), the Parquet tables (from
   the verified JSONL), the session list's rows, and the manifest;
3. the temporary directory is proved as ``verify --file`` proves it (every sha256, every
   chain, every anchor with the signing key's public half, the Parquet against the JSONL);
4. in one transaction the sessions' rows are locked, found unchanged and marked archived
   (where, when, by whom, the manifest's sha256), and the directory is renamed to DIR just
   before the commit; a session that grew meanwhile leaves nothing marked and nothing named
   DIR;
5. the archive is recorded in the platform's audit log;
6. each month of ``events`` the sessions filled is detached when every session with events
   in it is archived (app/store/archive/detaching.py), each recorded in the audit log.

A failure before step 4 removes the temporary directory and changes nothing in the database.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from pydantic import BaseModel, ConfigDict

from app.errors import ChronicleError
from app.events.platform_audit import AuditPartitionDetached, AuditSessionsArchived
from app.sessions.platform_audit import Actor
from app.sessions.sql.archive_candidates import Candidate, quiet_sessions
from app.sessions.sql.archived_rows import session_state_rows
from app.sessions.sql.platform_audit import append_audit
from app.store import EventStore
from app.store.analytics import refresh_usage_rollups, write_parquet
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
    ArchiveRaceError,
    CheckedSession,
    DetachPlan,
    MonthVerdict,
    check_directory,
    described,
    detach_month,
    export_sessions,
    mark_archived,
    plan_detaching,
    sign_manifest,
    write_parquet_tables,
)
from app.store.integrity import AnchorRecord, key_id, sign_anchor


class ArchiveRefused(ChronicleError):
    """Nothing was archived; the message (one line) says why."""


class ArchiveRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    before: datetime
    directory: Path
    actor: Actor
    #: The operator's anchors file: each session is checked against its anchors first.
    earlier_anchors: dict[uuid.UUID, list[AnchorRecord]] = {}
    #: Detach the months the sessions filled (when every session in them is archived).
    detach: bool = True
    #: Only these sessions (a retention policy's), of those that ended before ``before``.
    only: frozenset[uuid.UUID] | None = None


class ArchiveOutcome(BaseModel):
    directory: Path
    manifest_sha256: str
    sessions: int
    events: int
    #: Sessions quiet since before DATE that have not ended, with their phase.
    not_ended: list[tuple[uuid.UUID, str]]
    detaching: DetachPlan
    detached: list[str]


class Progress(Protocol):
    """Told what is being done; a ``steady`` line (one of many alike) may be left out."""

    def __call__(self, text: str, *, steady: bool = False) -> None: ...


def refuse_unusable_directory(directory: Path) -> None:
    """DIR must be new, or an empty directory (an archive is never written over anything)."""
    if directory.exists() or directory.is_symlink():
        if not directory.is_dir() or directory.is_symlink():
            raise ArchiveRefused(f"{directory} exists and is not a directory")
        if any(directory.iterdir()):
            raise ArchiveRefused(f"{directory} is not empty: give a new or empty directory")
    parent = directory.absolute().parent
    if not parent.is_dir():
        raise ArchiveRefused(f"{parent} does not exist: make it first")


async def archive_sessions(
    store: EventStore,
    request: ArchiveRequest,
    key: Ed25519PrivateKey,
    progress: Progress,
    *,
    anchors_key: Ed25519PublicKey | None = None,
) -> ArchiveOutcome | None:
    """Archive the sessions that ended before ``request.before`` (see the module); None when
    none did (nothing is written, DIR is not made). ``key`` signs the archive's anchors;
    ``anchors_key`` is the key the operator's earlier anchors must be signed by (default:
    ``key``'s public half)."""
    refuse_unusable_directory(request.directory)
    quiet = await quiet_sessions(store, request.before)
    ended = [
        candidate
        for candidate in quiet
        if candidate.ended and (request.only is None or candidate.session_id in request.only)
    ]
    not_ended = [(c.session_id, c.phase) for c in quiet if not c.ended]
    if not ended:
        return None
    final = request.directory.absolute()
    staging = final.parent / f".{final.name}.partial-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        trusted = anchors_key or key.public_key()
        manifest = await _write(store, request, key, trusted, ended, staging, progress)
        progress("checking what was written")
        report = await asyncio.to_thread(check_directory, staging, key.public_key())
        if not report.ok:
            raise ArchiveRefused(f"the archive written does not verify: {report.reason}")
        digest = report.manifest_sha256 or ""
        _unchanged_since_chosen(ended, manifest)
        heads = {s.session_id: (s.events, bytes.fromhex(s.head)) for s in manifest.sessions}
        await mark_archived(
            store,
            heads,
            archived_at=manifest.archived_at,
            archived_by=manifest.archived_by,
            archived_to=str(final),
            manifest_sha256=bytes.fromhex(digest),
            before_commit=lambda: _rename(staging, final),
        )
    except BaseException:
        await asyncio.to_thread(shutil.rmtree, staging, True)
        raise
    await append_audit(
        store,
        AuditSessionsArchived(
            **request.actor.fields(),
            archived_to=str(final),
            manifest=digest,
            before=request.before,
            sessions=len(manifest.sessions),
            events=manifest.events,
        ),
    )
    plan, detached = DetachPlan(), []
    if request.detach:
        plan = await plan_detaching(store, [s.session_id for s in manifest.sessions])
        detached = await _detach(store, request.actor, plan, str(final), digest, progress)
    return ArchiveOutcome(
        directory=final,
        manifest_sha256=digest,
        sessions=len(manifest.sessions),
        events=manifest.events,
        not_ended=not_ended,
        detaching=plan,
        detached=detached,
    )


def _unchanged_since_chosen(ended: Sequence[Candidate], manifest: ArchiveManifest) -> None:
    """Each session was written as it was when it was found ended (one that took an event
    meanwhile, a message say, may not have ended any more); the marks then check that it is
    still so when they are made."""
    chosen = {candidate.session_id: candidate.last_seq for candidate in ended}
    for session in manifest.sessions:
        if session.events != chosen[session.session_id]:
            raise ArchiveRaceError(
                f"session {session.session_id} grew while it was archived (seq "
                f"{chosen[session.session_id]} when it was found ended, {session.events} written)"
            )


def _rename(staging: Path, final: Path) -> None:
    if final.is_dir():
        final.rmdir()  # empty (checked before): an existing empty DIR is replaced
    os.rename(staging, final)


async def _write(
    store: EventStore,
    request: ArchiveRequest,
    key: Ed25519PrivateKey,
    trusted: Ed25519PublicKey,
    ended: Sequence[Candidate],
    staging: Path,
    progress: Progress,
) -> ArchiveManifest:
    ids = [candidate.session_id for candidate in ended]
    total = len(ids)
    progress(f"writing {total} sessions that ended before {request.before.isoformat()}")
    with (staging / SESSIONS_JSONL).open("w", encoding="utf-8", newline="\n") as out:
        report = await export_sessions(
            store,
            ids,
            out,
            progress=lambda done: progress(f"written {done}/{total} sessions", steady=done < total),
        )
    anchors = await _anchors(store, request, key, trusted, report.sessions, progress)
    with (staging / ANCHORS).open("w", encoding="utf-8") as out:
        for record, _ in anchors.values():
            out.write(record.to_line() + "\n")
    progress("writing the Parquet tables")
    names = {
        "events": EVENTS_PARQUET,
        "sessions": SESSIONS_PARQUET,
        "llm_messages": MESSAGES_PARQUET,
    }
    tables = await asyncio.to_thread(write_parquet_tables, staging / SESSIONS_JSONL, staging, names)
    state_rows = await write_parquet(
        staging / SESSION_STATE_PARQUET, session_state_rows(store, ids)
    )
    rows = {**{names[t]: n for t, n in tables.rows.items()}, SESSION_STATE_PARQUET: state_rows}
    files = {
        name: await asyncio.to_thread(described, staging / name, rows.get(name))
        for name in (SESSIONS_JSONL, ANCHORS, *rows)
    }
    sessions = [
        ArchivedSession(
            session_id=checked.session_id,
            events=checked.events,
            head=checked.head,
            first_event_at=tables.times[checked.session_id][0],
            last_event_at=tables.times[checked.session_id][1],
            anchor=anchors[checked.session_id][0],
            checked_against=anchors[checked.session_id][1],
        )
        for checked in report.sessions
    ]
    manifest = ArchiveManifest(
        before=request.before,
        archived_at=datetime.now(UTC),
        archived_by=request.actor.name,
        key_id=key_id(key.public_key()),
        sessions=sessions,
        events=sum(s.events for s in sessions),
        files=files,
    )
    text = manifest.text()
    (staging / MANIFEST).write_bytes(text)
    (staging / MANIFEST_SIGNATURE).write_bytes(sign_manifest(key, text))
    return manifest


async def _anchors(
    store: EventStore,
    request: ArchiveRequest,
    key: Ed25519PrivateKey,
    trusted: Ed25519PublicKey,
    sessions: Sequence[CheckedSession],
    progress: Progress,
) -> dict[uuid.UUID, tuple[AnchorRecord, AnchorRecord | None]]:
    """Each session's head signed; a session the operator anchored before is first verified
    in the database against those anchors (a rewrite since is refused here)."""
    signed: dict[uuid.UUID, tuple[AnchorRecord, AnchorRecord | None]] = {}
    if request.earlier_anchors:
        progress("checking the sessions against the anchors file")
    for checked in sessions:
        session_id, events, head = checked.session_id, checked.events, checked.head
        earlier = request.earlier_anchors.get(session_id, [])
        against = None
        if earlier:
            verified = await store.verify(session_id, anchors=earlier, trusted=trusted)
            if not verified.ok:
                raise ArchiveRefused(
                    f"session {session_id} does not verify against the anchors file: "
                    f"{verified.reason}"
                )
            if (verified.checked, verified.head) != (events, head):
                raise ArchiveRefused(f"session {session_id} grew while it was archived")
            against = max(earlier, key=lambda record: record.last_seq)
        record = sign_anchor(key, session_id, events, bytes.fromhex(head))
        signed[session_id] = (record, against)
    return signed


async def _detach(
    store: EventStore,
    actor: Actor,
    plan: DetachPlan,
    archived_to: str,
    manifest: str,
    progress: Progress,
) -> list[str]:
    detached: list[str] = []
    if any(month.detach for month in plan.months):
        # the usage rollups count the months' model calls before they go, so daily_usage
        # and session_costs keep them (docs/analytics.md, "How the usage views stay fast")
        progress("counting the model calls of the months into the usage rollups")
        await refresh_usage_rollups(store)
    month: MonthVerdict
    for month in plan.months:
        if not month.detach:
            continue
        progress(f"detaching {month.partition}")
        await detach_month(store, month)
        detached.append(month.partition)
        await append_audit(
            store,
            AuditPartitionDetached(
                **actor.fields(),
                partition=month.partition,
                start=month.start,
                end=month.end,
                archived_to=archived_to,
                manifest=manifest,
            ),
        )
    return detached
