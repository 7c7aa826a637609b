"""`chronicle export --otlp URL [SESSION ... | --all | --since DATE]`: sessions sent to an
OpenTelemetry collector as traces (OTLP/HTTP, protobuf), by the GenAI semantic conventions
(app/interchange/otel). Contents (messages, tool arguments and results) only with
``--content``; ``--header NAME=VALUE`` for a backend that wants a key."""

from __future__ import annotations

import argparse
import sys
import uuid

import httpx

from app.cli.log import open_store
from app.config import Settings
from app.interchange.otel.export import OtlpExportError, export_sessions, traces_endpoint
from app.interchange.sql.session_starts import sessions_since
from app.projections.otlp.spans import SEMCONV_VERSION
from app.store.integrity import session_ids


def header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name.strip(), value


def add_otlp_arguments(export: argparse.ArgumentParser) -> None:
    """`chronicle export --otlp URL ...` (the parser itself is app/cli/archive.py's)."""
    export.add_argument(
        "--otlp",
        metavar="URL",
        help="send the sessions as OpenTelemetry traces (GenAI semantic conventions "
        f"v{SEMCONV_VERSION}) to the OTLP/HTTP collector at URL (its /v1/traces)",
    )
    export.add_argument(
        "--all", action="store_true", help="with --otlp: every session (else name SESSIONs)"
    )
    export.add_argument(
        "--content",
        action="store_true",
        help="with --otlp: include messages, tool arguments and results (off: counts, names, "
        "times and errors only)",
    )
    export.add_argument(
        "--header",
        type=header,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --otlp: an HTTP header for the collector (e.g. its API key); repeatable",
    )


async def export_otlp(args: argparse.Namespace, settings: Settings) -> int:
    if args.view or args.output or args.format:
        print("error: --otlp sends sessions; --view, --format and -o do not go with it",
              file=sys.stderr)  # fmt: skip
        return 2
    chosen = sum((bool(args.sessions), bool(args.all), args.since is not None))
    if chosen != 1:
        print("error: with --otlp, name the SESSIONs, or give --all or --since DATE (one)",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        endpoint = traces_endpoint(args.otlp)
    except OtlpExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def sent(session: uuid.UUID, spans: int) -> None:
        if spans:
            print(f"{session}: {spans} spans", file=sys.stderr)

    async with await open_store(settings) as store, httpx.AsyncClient(timeout=30.0) as client:
        if args.all:
            sessions = await session_ids(store)
        elif args.since is not None:
            sessions = await sessions_since(store, args.since)
        else:
            sessions = list(dict.fromkeys(args.sessions))
        try:
            report = await export_sessions(
                store, sessions, client, endpoint, content=args.content,
                headers=dict(args.header), on_session=sent,
            )  # fmt: skip
        except OtlpExportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    rejected = ""
    if report.rejected:
        why = f": {report.rejected_because}" if report.rejected_because else ""
        rejected = f"; the collector rejected {report.rejected}{why}"
    print(f"sent {report.sessions} sessions, {report.spans} spans to {endpoint}{rejected}",
          file=sys.stderr)  # fmt: skip
    return 1 if report.rejected else 0
