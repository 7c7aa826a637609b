"""`chronicle export | import` and `chronicle verify --file`: whole sessions in a JSONL file.
(`export --otlp URL` sends them to an OpenTelemetry collector instead: app/cli/otlp.py.)

A file written (not stdout) is noted in the data directory's ledger (app/cli/on_disk.py), so
that `chronicle redact --value-file` looks in it too.

An export holds every column of every event (blobs resolved, the hash chain intact), so a
file can be checked without a database (`verify --file`) and loaded into another one
(`import`), which refuses a file that does not verify. `export --view` writes an analytics
view instead (app/cli/analytics.py), `export --format atif SESSION` one session as an ATIF
trajectory (app/interchange/atif; `import --from atif` reads one back).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path

from app.cli import analytics as analytics_cli
from app.cli.on_disk import note_written
from app.cli.otlp import add_otlp_arguments, export_otlp
from app.cli.session_ids import session_id
from app.cli.terminal import raw
from app.config import Settings
from app.interchange.atif.session import AtifExportError, session_trajectory
from app.interchange.importers import IMPORTERS, ImportProblem, read_recording
from app.interchange.importers.writing import ImportConflict, write_session
from app.store import EventStore, admin_database_url, ensure_database
from app.store.archive import FileReport, check_file, export_sessions, import_file


def add_parsers(commands: argparse._SubParsersAction) -> None:
    export_parser = commands.add_parser(
        "export",
        help="write whole sessions as JSONL (for archiving or another database), or a view "
        "as CSV/Parquet (--view)",
    )
    export_parser.add_argument("sessions", type=session_id, nargs="*", metavar="SESSION")
    export_parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write to FILE (default: stdout)"
    )
    export_parser.add_argument(
        "--timeout",
        type=analytics_cli.positive_seconds,
        default=300.0,
        metavar="SECONDS",
        help="with --view: cancel the query after SECONDS (default 300)",
    )
    analytics_cli.add_view_arguments(export_parser)
    add_otlp_arguments(export_parser)

    load = commands.add_parser(
        "import",
        help="load sessions from a `chronicle export` file (idempotent; refuses a changed file), "
        "or another agent's recording (--from)",
    )
    load.add_argument(
        "file", type=Path, metavar="FILE", help="an export file, or a `chronicle archive` DIR"
    )
    load.add_argument(
        "--from",
        dest="recording_format",
        choices=sorted(IMPORTERS),
        metavar="FORMAT",
        help="FILE is another agent's recording: atif (an ATIF trajectory, docs/atif.md), "
        "openhands (a trajectory's list of events, or an evaluation's output.jsonl) or "
        "swe-agent (a .traj file); each becomes a session (importing it again writes nothing)",
    )
    export_parser.set_defaults(handler=export)
    load.set_defaults(handler=import_)


def add_verify_arguments(verify: argparse.ArgumentParser) -> None:
    """`chronicle verify --file FILE` (the parser itself is app/cli/audit.py's)."""
    verify.add_argument(
        "--file",
        type=Path,
        metavar="FILE",
        help="check a `chronicle export` file, or a `chronicle archive` directory (with "
        "--public-key for its anchors), instead of the database (no database needed)",
    )


async def export(args: argparse.Namespace, settings: Settings) -> int:
    if args.otlp:
        return await export_otlp(args, settings)
    if args.all or args.content or args.header:
        print("error: --all, --content and --header go with --otlp URL", file=sys.stderr)
        return 2
    if args.format == "atif":
        return await export_atif(args, settings)
    if args.view:
        if args.sessions:
            print("error: give SESSIONs or --view NAME, not both", file=sys.stderr)
            return 2
        written = await analytics_cli.export_view(args, settings)
        if written == 0 and args.output is not None:
            note_written(settings, args.output, args.format or "csv", view=args.view)
        return written
    if args.since or args.format:
        print("error: --since and --format go with --view NAME", file=sys.stderr)
        return 2
    if not args.sessions:
        print("error: name the SESSIONs to export, or --view NAME", file=sys.stderr)
        return 2
    sessions = list(dict.fromkeys(args.sessions))
    url = await asyncio.to_thread(ensure_database, settings.database_config())
    async with await EventStore.open(
        url, config=settings.store.long_running(), masker=settings.masker()
    ) as store:
        if args.output is None:
            # data, byte for byte what the API's export sends (app.cli.terminal)
            report = await export_sessions(store, sessions, raw(sys.stdout))
        else:
            report = await _export_to_file(store, sessions, args.output)
            note_written(settings, args.output, "sessions", sessions=sessions)
    events = sum(session.events for session in report.sessions)
    where = f" to {args.output}" if args.output else ""
    print(
        f"exported {len(report.sessions)} sessions, {events} events, {report.messages} "
        f"prompt messages{where}",
        file=sys.stderr,
    )
    return 0


async def export_atif(args: argparse.Namespace, settings: Settings) -> int:
    """`chronicle export --format atif SESSION [-o FILE]`: one session, one trajectory (an
    ATIF file is one trajectory: more sessions are refused, not joined)."""
    if args.view or args.since:
        print("error: --format atif writes a SESSION, not a --view (--since)", file=sys.stderr)
        return 2
    sessions = list(dict.fromkeys(args.sessions))
    if len(sessions) != 1:
        print(
            "error: --format atif writes one SESSION (an ATIF file is one trajectory; "
            f"{len(sessions)} given): export each to a file of its own",
            file=sys.stderr,
        )
        return 2
    url = await asyncio.to_thread(ensure_database, settings.database_config())
    async with await EventStore.open(
        url, config=settings.store.long_running(), masker=settings.masker()
    ) as store:
        try:
            document = await session_trajectory(store, sessions[0])
        except AtifExportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate the log keeps: JSON's escape carries it
        data = (json.dumps(document, ensure_ascii=True, indent=2) + "\n").encode()
    if args.output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        await asyncio.to_thread(_write_whole, args.output, data)
        note_written(settings, args.output, "atif", sessions=sessions)
    where = f" to {args.output}" if args.output else ""
    print(
        f"exported {sessions[0]} as {document.get('schema_version')}: "
        f"{len(document['steps'])} steps{where}",
        file=sys.stderr,
    )
    return 0


def _write_whole(path: Path, data: bytes) -> None:
    """``data`` written beside ``path`` and renamed over it: never a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


async def _export_to_file(store: EventStore, sessions: list[uuid.UUID], path: Path) -> FileReport:
    """Written beside ``path`` and renamed over it when complete: a failed export leaves no
    partial file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            report = await export_sessions(store, sessions, out)
        os.replace(temporary, path)
    except BaseException:
        await asyncio.to_thread(Path(temporary).unlink, missing_ok=True)
        raise
    return report


async def import_(args: argparse.Namespace, settings: Settings) -> int:
    if args.file.is_dir() and not args.recording_format:
        from app.cli.archive_dir import import_directory  # `chronicle archive`'s directory

        return await import_directory(args.file, settings)
    if not args.file.is_file():
        print(f"error: {args.file} is not a file or an archive directory", file=sys.stderr)
        return 2
    if args.recording_format:
        return await import_recording(args.recording_format, args.file, settings)
    config = settings.database_config()
    await asyncio.to_thread(ensure_database, config)  # the embedded one started, migrated
    url = await asyncio.to_thread(admin_database_url, config)
    async with await EventStore.open(
        url, config=settings.store.long_running(), masker=settings.masker()
    ) as store:
        report = await import_file(store, args.file)
    print(
        f"imported {report.sessions} sessions: {report.imported} events written, "
        f"{report.present} already present, {report.messages} prompt messages, "
        f"{report.blobs} blobs"
    )
    return 0


async def import_recording(format_name: str, path: Path, settings: Settings) -> int:
    """`chronicle import --from FORMAT FILE`: the file's sessions, each written once."""
    data = await asyncio.to_thread(path.read_bytes)
    try:
        sessions = await asyncio.to_thread(read_recording, format_name, path.name, data)
    except ImportProblem as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    url = await asyncio.to_thread(ensure_database, settings.database_config())
    async with await EventStore.open(
        url, config=settings.store.long_running(), masker=settings.masker()
    ) as store:
        for session in sessions:
            try:
                result = await write_session(store, session)
            except ImportConflict as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            what = "already imported" if result.already_present else "imported"
            print(
                f"{session.session_id}  {what}: {len(session.events)} events, "
                f"{session.model_calls} model calls  {session.title}"
            )
    return 0


def verify_file(path: Path) -> int:
    """`chronicle verify --file`: every session of the file, or its first bad line."""
    if not path.is_file():
        print(f"error: {path} is not a file", file=sys.stderr)
        return 2
    report = check_file(path)
    for session in report.sessions:
        print(f"{session.session_id}  ok: {session.events} events, hash chain intact")
    if not report.ok:
        where = f"line {report.line}: " if report.line else ""
        print(f"{path}  BROKEN at {where}{report.reason}")
        return 1
    print(
        f"{path}  ok: {len(report.sessions)} sessions, {report.messages} prompt messages and "
        f"{report.blobs} blobs match their hashes"
    )
    return 0
