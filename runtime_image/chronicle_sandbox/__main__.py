"""python3 -m chronicle_sandbox --workspace DIR [--token-file F] [--host H] [--port P] ...

The token is read from ``--token-file`` (which is then deleted) or, as a fallback, from
CHRONICLE_SANDBOX_TOKEN (removed from the environment); either way before the shell starts,
so commands in the sandbox never see it, and it never appears on a command line.
"""

from __future__ import annotations

import argparse
import os
import sys

from .actions import Executor
from .files import Files
from .jail import bubblewrap_prefix
from .server import SandboxState, serve
from .shell import Shell


def read_token(token_file: str | None) -> str:
    """The token from ``token_file`` (deleted once read) or the environment (removed from it)."""
    from_env = os.environ.pop("CHRONICLE_SANDBOX_TOKEN", "")
    if not token_file:
        return from_env
    with open(token_file, encoding="utf-8") as handle:
        token = handle.read().strip()
    try:
        os.unlink(token_file)  # commands in the sandbox must not find it
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise OSError(f"{token_file} was read but cannot be deleted ({exc})") from None
    return token


def main() -> int:
    parser = argparse.ArgumentParser(prog="chronicle_sandbox")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--unix-socket", help="listen on this Unix socket instead of TCP")
    parser.add_argument(
        "--no-confine", action="store_true", help="allow paths outside the workspace"
    )
    parser.add_argument(
        "--no-output-timeout",
        type=float,
        default=float(os.environ.get("CHRONICLE_SANDBOX_NO_OUTPUT_TIMEOUT", "10")),
        help="seconds without output before a command is reported as still running",
    )
    parser.add_argument("--max-output-chars", type=int, default=30_000)
    parser.add_argument(
        "--jail", choices=["bwrap", "none"], default="none", help="run the shell in bubblewrap"
    )
    parser.add_argument(
        "--network", action="store_true", help="let the jailed shell use the network"
    )
    parser.add_argument(
        "--token-file", help="read the token from this file, then delete it (preferred)"
    )
    args = parser.parse_args()
    try:
        token = read_token(args.token_file)
    except OSError as exc:
        print(f"chronicle_sandbox: token file: {exc}", file=sys.stderr)
        return 2
    if not token:
        print(
            "chronicle_sandbox: give the token in --token-file or CHRONICLE_SANDBOX_TOKEN",
            file=sys.stderr,
        )
        return 2
    workspace = os.path.abspath(args.workspace)
    os.makedirs(workspace, exist_ok=True)
    prefix = None
    if args.jail == "bwrap":
        prefix = bubblewrap_prefix(workspace, network=args.network)
        if prefix is None:
            print("chronicle_sandbox: --jail bwrap needs bubblewrap (bwrap)", file=sys.stderr)
            return 2
    shell = Shell(
        workspace,
        dict(os.environ),
        no_output_timeout=args.no_output_timeout,
        max_output_chars=args.max_output_chars,
        prefix=prefix,
    )
    executor = Executor(shell, Files(workspace, confine=not args.no_confine))
    state = SandboxState(token, executor, workspace, not args.no_confine)
    serve(state, host=args.host, port=args.port, unix_socket=args.unix_socket)
    return 0


if __name__ == "__main__":
    sys.exit(main())
