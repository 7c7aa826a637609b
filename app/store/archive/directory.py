"""Prove an archive directory without a database (``chronicle verify --file DIR``).

In this order, stopping at the first problem, which names its file (and line):

1. the manifest reads as one, the directory holds exactly the files it names (and the
   manifest's signature), and with the trusted key the signature is that key's over the
   manifest's bytes;
2. every file's sha256 and size are the manifest's (any changed byte of any file is caught
   here; for the JSONL the checker then names the line);
3. the JSONL verifies as an export file (every session's chain, prompt messages, blobs), and
   its sessions are the manifest's, with the same counts and heads;
4. every session's anchor is in ``anchors.jsonl``, names its last seq and head, and is signed
   by the trusted key (the deployment's, never one the archive brings). Without a trusted key
   the anchors are not checked, and the report says so;
5. the Parquet tables agree with the JSONL: the same sessions, events and last hashes.

Steps 1-3 need nothing but the directory; 4 needs the public key; so a rewrite of the whole
archive (files and manifest recomputed) is caught by the anchors, and anything less by the
hashes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel

from app.store.archive.checker import CheckedSession, check_file
from app.store.archive.manifest import (
    ANCHORS,
    EVENTS_PARQUET,
    MANIFEST,
    MANIFEST_SIGNATURE,
    SESSIONS_JSONL,
    SESSIONS_PARQUET,
    ArchiveManifest,
    ManifestError,
    file_sha256,
    manifest_signature_problem,
    read_manifest_bytes,
)
from app.store.archive.parquet import parquet_heads, parquet_rows
from app.store.errors import StoreError
from app.store.integrity.anchors import AnchorFileError, anchor_problem, key_id, read_anchors


class ArchiveProblem(StoreError):
    """The first problem of an archive directory (internal: becomes a failed report)."""


class DirectoryReport(BaseModel):
    ok: bool
    #: sha256 hex of manifest.json: what the database's ``sessions.archive_manifest`` holds.
    manifest_sha256: str | None = None
    sessions: list[CheckedSession] = []
    events: int = 0
    files: int = 0
    #: Whether the manifest's and the anchors' signatures were checked (a trusted key was
    #: given).
    anchors_checked: bool = False
    reason: str = ""


def _files(directory: Path, manifest: ArchiveManifest) -> None:
    present = {path.name for path in directory.iterdir()}
    for name in sorted([*manifest.files, MANIFEST_SIGNATURE]):
        if name not in present:
            raise ArchiveProblem(f"{name} is missing (the manifest names it)")
    extra = sorted(present - set(manifest.files) - {MANIFEST, MANIFEST_SIGNATURE})
    if extra:
        raise ArchiveProblem(f"{extra[0]} is not in the manifest (a file added to the archive)")
    for name, described in sorted(manifest.files.items()):
        path = directory / name
        if not path.is_file():
            raise ArchiveProblem(f"{name} is not a file")
        digest = file_sha256(path)
        if digest == described.sha256 and path.stat().st_size == described.bytes:
            continue
        detail = ""
        if name == SESSIONS_JSONL:
            report = check_file(path)
            if not report.ok:
                where = f"line {report.line}: " if report.line else ""
                detail = f"; {where}{report.reason}"
        raise ArchiveProblem(
            f"{name} was changed: its sha256 is {digest}, the manifest says "
            f"{described.sha256}{detail}"
        )


def _sessions(directory: Path, manifest: ArchiveManifest) -> list[CheckedSession]:
    report = check_file(directory / SESSIONS_JSONL)
    if not report.ok:
        where = f"line {report.line}: " if report.line else ""
        raise ArchiveProblem(f"{SESSIONS_JSONL}: {where}{report.reason}")
    found = [(s.session_id, s.events, s.head) for s in report.sessions]
    listed = [(s.session_id, s.events, s.head) for s in manifest.sessions]
    if found != listed:
        raise ArchiveProblem(
            f"{SESSIONS_JSONL} holds other sessions (or counts, or heads) than the manifest names"
        )
    if sum(s.events for s in report.sessions) != manifest.events:
        raise ArchiveProblem(f"the manifest counts {manifest.events} events, the JSONL another")
    return report.sessions


def _anchors(directory: Path, manifest: ArchiveManifest, trusted: Ed25519PublicKey | None) -> None:
    try:
        records = read_anchors(directory / ANCHORS)
    except AnchorFileError as exc:
        raise ArchiveProblem(str(exc)) from None
    for session in manifest.sessions:
        record = session.anchor
        if record not in records:
            raise ArchiveProblem(f"{ANCHORS} has no anchor of session {session.session_id}")
        if (record.session_id, record.last_seq, record.head) != (
            session.session_id,
            session.events,
            session.head,
        ):
            raise ArchiveProblem(
                f"the anchor of session {session.session_id} names seq {record.last_seq}, "
                f"not the {session.events} events the archive holds"
            )
        if trusted is not None:
            problem = anchor_problem(record, trusted)
            if problem is not None:
                raise ArchiveProblem(f"{ANCHORS}, session {session.session_id}: {problem}")
    if trusted is not None and manifest.key_id != key_id(trusted):
        raise ArchiveProblem(
            f"the archive was signed with key {manifest.key_id}, not the trusted key "
            f"{key_id(trusted)}"
        )


def _parquet(directory: Path, manifest: ArchiveManifest) -> None:
    heads = parquet_heads(directory / EVENTS_PARQUET)
    for session in manifest.sessions:
        found = heads.pop(str(session.session_id), None)
        if found != (session.events, session.head):
            raise ArchiveProblem(
                f"{EVENTS_PARQUET} does not hold session {session.session_id} as the JSONL does "
                f"({session.events} events ending at {session.head[:12]}…)"
            )
    if heads:
        raise ArchiveProblem(f"{EVENTS_PARQUET} holds a session the JSONL has not: {min(heads)}")
    if parquet_rows(directory / SESSIONS_PARQUET) != len(manifest.sessions):
        raise ArchiveProblem(f"{SESSIONS_PARQUET} does not hold one row per session")


def check_directory(directory: Path, trusted: Ed25519PublicKey | None) -> DirectoryReport:
    """Verify the archive in ``directory`` (see the module); the report names the problem."""
    try:
        manifest, data = read_manifest_bytes(directory)
    except ManifestError as exc:
        return DirectoryReport(ok=False, reason=str(exc))
    digest = hashlib.sha256(data).hexdigest()
    try:
        _files(directory, manifest)
        if trusted is not None:
            signature = (directory / MANIFEST_SIGNATURE).read_bytes()
            problem = manifest_signature_problem(data, signature, trusted)
            if problem is not None:
                raise ArchiveProblem(problem)
        sessions = _sessions(directory, manifest)
        _anchors(directory, manifest, trusted)
        _parquet(directory, manifest)
    except ArchiveProblem as problem:
        return DirectoryReport(ok=False, manifest_sha256=digest, reason=str(problem))
    except (OSError, ValueError) as exc:  # a Parquet file pyarrow cannot read, say
        return DirectoryReport(ok=False, manifest_sha256=digest, reason=f"unreadable: {exc}")
    return DirectoryReport(
        ok=True,
        manifest_sha256=digest,
        sessions=sessions,
        events=manifest.events,
        files=len(manifest.files) + 2,
        anchors_checked=trusted is not None,
    )
