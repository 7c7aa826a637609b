"""The options of a command whose agent's model calls go through a running server's gateway
(``chronicle record``, ``chronicle eval run|replay`` of agent commands): which server, and
whose sessions and tokens they are."""

from __future__ import annotations

import argparse
import getpass
import os

from app.cli.users import DEFAULT_SERVER_URL


def add_gateway_options(parser: argparse.ArgumentParser, which: str) -> None:
    """``--url`` and ``--user``: the running server whose gateway an agent command's model
    calls go through, and whose they are (as ``chronicle record`` takes them)."""
    parser.add_argument(
        "--url",
        default=os.environ.get("CHRONICLE_URL") or DEFAULT_SERVER_URL,
        help=f"{which}: the running chronicle serve whose gateway records the command's model "
        f"calls (default: CHRONICLE_URL, else {DEFAULT_SERVER_URL})",
    )
    parser.add_argument(
        "--user",
        default=os.environ.get("CHRONICLE_USER"),
        help=f"{which}: whose sessions and tokens they are (default: CHRONICLE_USER, else "
        "your login name)",
    )


def gateway_user(args: argparse.Namespace) -> str:
    """Whose sessions the recorded commands are: ``--user``, else the login name."""
    if args.user:
        return str(args.user)
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
