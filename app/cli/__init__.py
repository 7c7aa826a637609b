"""The `chronicle` command. Imports stay lazy so that quick commands start quickly."""

from __future__ import annotations

import argparse
import asyncio
import inspect
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.cli import agent as agent_cli
from app.cli import analytics as analytics_cli
from app.cli import annotate as annotate_cli
from app.cli import archive as archive_cli
from app.cli import archive_dir as archive_dir_cli
from app.cli import audit as audit_cli
from app.cli import audit_log as audit_log_cli
from app.cli import bench as bench_cli
from app.cli import db as db_cli
from app.cli import erase as erase_cli
from app.cli import evaluation as evaluation_cli
from app.cli import log as log_cli
from app.cli import projections as projections_cli
from app.cli import record as record_cli
from app.cli import redact as redact_cli
from app.cli import replay as replay_cli
from app.cli import runtime as runtime_cli
from app.cli import server as server_cli
from app.cli import users as users_cli
from app.cli import worker as worker_cli
from app.cli.terminal import escaped_streams
from app.errors import ChronicleError

if TYPE_CHECKING:
    from app.config import Settings


#: The command modules, in ``--help`` order. Each one adds its commands' parsers and sets each
#: parser's ``handler`` (``parser.set_defaults(handler=...)``): a new command is a module and
#: its line here. A handler takes the arguments and the settings and returns the exit code,
#: as a coroutine function or a plain one.
COMMAND_MODULES = (
    db_cli,
    log_cli,
    annotate_cli,
    redact_cli,
    erase_cli,
    projections_cli,
    audit_cli,
    audit_log_cli,
    runtime_cli,
    agent_cli,
    replay_cli,
    analytics_cli,
    archive_cli,
    archive_dir_cli,
    evaluation_cli,
    worker_cli,
    users_cli,
    server_cli,
    record_cli,
    bench_cli,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chronicle",
        description="Chronicle: an event-sourced backend for AI coding agents on PostgreSQL.",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="log what happens")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.add_parsers(commands)
    return parser


def dispatch(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.session_ids import resolve_prefixes

    asyncio.run(resolve_prefixes(args, settings))  # returns at once when no prefix was given
    handler = args.handler
    if inspect.iscoroutinefunction(handler):
        return int(asyncio.run(handler(args, settings)))
    return int(handler(args, settings))


#: Loggers whose news a command reports itself, shown with ``-v`` only: retries through a lost
#: database (a run that loses it ends with one line saying so), and failures that are recorded
#: in the log (the printed events and the run's summary say them).
QUIET_LOGGERS = {
    "app.store.subscriptions": logging.ERROR,
    "app.store.notifier": logging.ERROR,
    "asyncpg.pool": logging.ERROR,
    "app.projections.runner": logging.ERROR,
    "app.agent.driving": logging.CRITICAL,
    "app.store.action_worker": logging.CRITICAL,
    "app.runtime.executor": logging.CRITICAL,
    # A line for every model call, twice (its own handler and the server's): the log has them.
    "LiteLLM": logging.WARNING,
}


class _ClientGoneWrites(logging.Filter):
    """Drops asyncio's "socket.send() raised exception." warning. A live stream writes a burst
    of events in one go; when its client has just dropped the connection, every write of the
    burst after the fifth logs that line before the stream hears of the disconnect (and then
    ends). It says only that a client left, dozens of times a client: a server's log would be
    mostly that line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != "socket.send() raised exception."


class ConfigurationError(ChronicleError):
    """The settings cannot be read; the message says which file or value, and why."""


def load_settings() -> Settings:
    """The settings, or a ``ConfigurationError`` in one sentence: a ``CHRONICLE_CONFIG``
    naming no file (a typo would silently mean the defaults), a file that is not TOML (with
    the line), or a value of the wrong kind."""
    import tomllib

    from pydantic import ValidationError

    from app.config import Settings, default_config_file, flat_names

    explicit = os.environ.get("CHRONICLE_CONFIG")
    if explicit and not default_config_file().is_file():
        raise ConfigurationError(
            f"CHRONICLE_CONFIG names {explicit}, which does not exist; create it, or unset "
            "CHRONICLE_CONFIG to use the default settings file"
        )
    try:
        return Settings()
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(
            f"the settings file {default_config_file()} is not valid TOML: {exc}"
        ) from None
    except ValidationError as exc:
        names = flat_names()  # a nested setting by the flat name the user may have written
        problems = "; ".join(
            f"{names.location(e['loc'])}: {e['msg']}" if e["loc"] else e["msg"]
            for e in exc.errors()
        )
        raise ConfigurationError(f"invalid configuration ({problems})") from None
    except ValueError as exc:  # e.g. llm_api_key_file names a file that cannot be read
        raise ConfigurationError(f"invalid configuration ({exc})") from None


def _printable_streams() -> None:
    """Text the log holds but no terminal encoding can (a lone surrogate in a file name the
    model sent) prints as its escape, ``\\udce9`` — also valid inside ``--json`` output —
    instead of ending the command with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse, also taking a trailing message after the options (``fork S --at 5 "msg"``,
    ``resume S --workspace W "msg"``): argparse fills a subcommand's positionals from the
    first run of them only, so without this the message after an option is refused."""
    args, extra = parser.parse_known_args(argv)
    if (
        len(extra) == 1
        and not extra[0].startswith("-")
        and hasattr(args, "message")
        and args.message is None
    ):
        args.message = extra[0]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    _printable_streams()
    with escaped_streams():  # text from the log never acts on the terminal (app.cli.terminal)
        return _run(argv)


def _run(argv: Sequence[str] | None) -> int:
    args = _parse(build_parser(), argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        for name, level in QUIET_LOGGERS.items():
            logging.getLogger(name).setLevel(level)
    logging.getLogger("asyncio").addFilter(_ClientGoneWrites())
    from app.cli.session_ids import UnknownSessionPrefix
    from app.events import InvalidEventError
    from app.store import StoreError

    try:
        settings = load_settings()
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return dispatch(args, settings)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `chronicle events ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (StoreError, InvalidEventError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except UnknownSessionPrefix as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a clear line instead of a traceback; -v shows the traceback
        if args.verbose:
            raise
        print(f"error: {type(exc).__name__}: {exc} (run with -v for details)", file=sys.stderr)
        return 1
