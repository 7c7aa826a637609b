"""`chronicle archive --before DATE -o DIR`: the sessions that ended before DATE, written to an
archive directory (JSONL, Parquet, anchors, a manifest) and proved, then marked archived and
the months they filled detached (app/sessions/archiving.py); the directory is noted in the
data directory's ledger (app/cli/on_disk.py) for `chronicle redact --value-file`.

Also the directory forms of the archive commands: `verify --file DIR` proves an archive
without a database, `import DIR` brings one back, and `sql --archive DIR` queries it in
place (app/cli/archive.py and app/cli/analytics.py call these).

Runs as the owner of Chronicle's tables (the URL migrations use), as `import` does: marking
sessions archived and detaching months are the owner's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from app.cli.analytics import since_date
from app.cli.on_disk import note_written
from app.cli.progress import StderrProgress
from app.config import Settings
from app.sessions.archiving import (
    ArchiveOutcome,
    ArchiveRefused,
    ArchiveRequest,
    archive_sessions,
    refuse_unusable_directory,
)
from app.sessions.platform_audit import terminal_actor
from app.store import EventStore, StoreError, admin_database_url, ensure_database
from app.store.archive import (
    SESSIONS_JSONL,
    ArchiveRaceError,
    DirectoryReport,
    ImportReport,
    check_directory,
    import_file,
    read_manifest,
)
from app.store.integrity import (
    AnchorRecord,
    load_private_key,
    read_anchors,
    signing_key,
    trusted_public_key,
)


def add_parsers(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "archive",
        help="write the sessions that ended before DATE to DIR (JSONL, Parquet, anchors, "
        "manifest), verify it, mark them archived, and detach the months they filled",
    )
    parser.add_argument(
        "--before",
        required=True,
        metavar="DATE",
        help="sessions that ended before DATE (a UTC date, or a time): their agent finished, "
        "awaits input, stopped, failed or met its limit, nothing runs them, and their last "
        "event is older",
    )
    parser.add_argument(
        "-o", "--output", required=True, type=Path, metavar="DIR", help="a new or empty directory"
    )
    parser.add_argument(
        "--anchors",
        type=Path,
        metavar="FILE",
        help="an anchors file (`chronicle anchor`): each session is checked against it first",
    )
    parser.add_argument(
        "--public-key",
        type=Path,
        metavar="FILE",
        help="with --anchors: the key they are signed by (default: the one signing the archive)",
    )
    parser.add_argument(
        "--key",
        type=Path,
        metavar="FILE",
        help="sign the archive's anchors with this Ed25519 key (default: the anchor key, "
        "as `chronicle anchor` signs)",
    )
    parser.add_argument(
        "--no-detach",
        action="store_true",
        help="archive and mark the sessions, but detach no month of events",
    )
    parser.set_defaults(handler=archive)


def _before(text: str) -> datetime:
    try:
        moment = since_date(text)
    except argparse.ArgumentTypeError as exc:
        raise ArchiveRefused(f"--before: {exc}") from None
    if moment > datetime.now(UTC):
        raise ArchiveRefused(
            f"--before {text} is in the future: sessions can only have ended before now"
        )
    return moment


async def archive(args: argparse.Namespace, settings: Settings) -> int:
    try:
        before = _before(args.before)
        refuse_unusable_directory(args.output)
        earlier = read_anchors(args.anchors) if args.anchors else []
    except ArchiveRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.key is not None:
        key = load_private_key(args.key)
    else:
        key, _, _ = signing_key(settings.anchor_key_file, settings.data_dir)
    anchors_key = _trusted(args.public_key, settings) if args.public_key else None
    grouped: dict[uuid.UUID, list[AnchorRecord]] = {}
    for record in earlier:
        grouped.setdefault(record.session_id, []).append(record)
    request = ArchiveRequest(
        before=before,
        directory=args.output,
        actor=terminal_actor(),
        earlier_anchors=grouped,
        detach=not args.no_detach,
    )
    config = settings.database_config()
    await asyncio.to_thread(ensure_database, config)
    await _projections_current(settings)
    url = await asyncio.to_thread(admin_database_url, config)
    async with await EventStore.open(
        url, config=settings.store.long_running(), masker=settings.masker()
    ) as store:
        try:
            outcome = await archive_sessions(
                store, request, key, StderrProgress("archive"), anchors_key=anchors_key
            )
        except (ArchiveRefused, ArchiveRaceError) as exc:
            print(f"error: {exc}; nothing was archived", file=sys.stderr)
            return 1
    if outcome is None:
        print(f"nothing to archive: no session ended before {before.isoformat()}")
        return 0
    manifest, _ = await asyncio.to_thread(read_manifest, outcome.directory)
    ids = [session.session_id for session in manifest.sessions]
    note_written(settings, outcome.directory, "archive", sessions=ids)
    _report(outcome, before)
    return 0


async def _projections_current(settings: Settings) -> None:
    """The projections brought up to date when no runner keeps them current, so each
    session's ``session_state`` row in the archive is as its events end."""
    from app.cli.log import open_store
    from app.projections import all_projections, bring_up_to_date

    async with await open_store(settings) as store:
        for projection in all_projections():
            await bring_up_to_date(store, projection, settings.projections)


def _report(outcome: ArchiveOutcome, before: datetime) -> None:
    print(
        f"archived {outcome.sessions} sessions, {outcome.events} events to {outcome.directory} "
        f"(manifest sha256 {outcome.manifest_sha256})"
    )
    if outcome.not_ended:
        phases: dict[str, int] = {}
        for _, phase in outcome.not_ended:
            phases[phase] = phases.get(phase, 0) + 1
        listed = ", ".join(f"{count} {phase}" for phase, count in sorted(phases.items()))
        print(
            f"kept: {len(outcome.not_ended)} sessions quiet since before "
            f"{before.isoformat()} have not ended ({listed})"
        )
    if outcome.detaching.unpartitioned:
        print(f"nothing detached: {outcome.detaching.unpartitioned}")
    for month in outcome.detaching.months:
        if month.detach:
            print(f"detached {month.partition}")
        else:
            print(f"kept {month.partition}: {month.reason}")


def _trusted(public_key: Path | None, settings: Settings) -> Ed25519PublicKey | None:
    """The key the archive's anchors must be signed by: the one given, else this machine's
    anchor key; None when there is neither (the anchors then go unchecked, and we say so)."""
    if public_key is not None:
        return trusted_public_key(public_key, settings.anchor_key_file, settings.data_dir)
    try:
        return trusted_public_key(None, settings.anchor_key_file, settings.data_dir)
    except StoreError:  # no anchor key here
        return None


def verify_directory(args: argparse.Namespace, settings: Settings) -> int:
    """`chronicle verify --file DIR`: the archive proved, or its first problem named."""
    trusted = _trusted(args.public_key, settings)
    report: DirectoryReport = check_directory(args.file, trusted)
    for session in report.sessions:
        print(f"{session.session_id}  ok: {session.events} events, hash chain intact")
    if not report.ok:
        print(f"{args.file}  BROKEN: {report.reason}")
        return 1
    print(
        f"{args.file}  ok: {len(report.sessions)} sessions, {report.events} events, "
        f"{report.files} files match the manifest (manifest sha256 {report.manifest_sha256})"
        + (
            "; the manifest and every anchor are signed by the trusted key"
            if report.anchors_checked
            else ""
        )
    )
    if not report.anchors_checked:
        print(
            "signatures not checked (the manifest's, the anchors'): no trusted key on this "
            "machine; pass --public-key FILE "
            "(the deployment's, `chronicle anchor --print-public-key`)",
            file=sys.stderr,
        )
        from app.cli.audit import UNANCHORED_STATUS  # (audit's parser calls this module)

        return 0 if args.allow_unanchored else UNANCHORED_STATUS
    return 0


async def import_directory(path: Path, settings: Settings) -> int:
    """`chronicle import DIR`: an archive brought back, after it is proved (anchors too when
    this machine has the key), through the export file's import."""
    trusted = _trusted(None, settings)
    report = await asyncio.to_thread(check_directory, path, trusted)
    if not report.ok:
        print(
            f"error: {path} does not verify: {report.reason}; nothing was imported", file=sys.stderr
        )
        return 1
    config = settings.database_config()
    await asyncio.to_thread(ensure_database, config)
    url = await asyncio.to_thread(admin_database_url, config)
    async with await EventStore.open(
        url, config=settings.store.long_running(), masker=settings.masker()
    ) as store:
        imported: ImportReport = await import_file(store, path / SESSIONS_JSONL)
    print(
        f"imported {imported.sessions} sessions from the archive {path}: {imported.imported} "
        f"events written, {imported.present} already present, {imported.messages} prompt "
        f"messages, {imported.blobs} blobs"
    )
    return 0
