"""python3 -m chronicle_sandbox --workspace DIR [--token-file F] [--host H] [--port P] ...

The token is read from ``--token-file`` (which is then deleted) or, as a fallback, from
CHRONICLE_SANDBOX_TOKEN (removed from the environment); either way before the shell starts,
so commands in the sandbox never see it, and it never appears on a command line.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys

from .actions import Executor
from .files import Files
from .quota import MIB, WorkspaceQuota
from .server import IDLE_TIMEOUT, MAX_CONNECTIONS, SandboxState, serve
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


def keep_to_itself() -> None:
    """Not dumpable: commands in the sandbox (same user) cannot ptrace this server or read its
    memory, descriptors or environment through /proc. Best effort; Linux only."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


def limits_of(args: argparse.Namespace) -> dict[int, int]:
    """The resource limits (``resource.RLIMIT_*`` -> value) the shell and its commands get.
    No file may be larger than the workspace may grow."""
    file_size = args.limit_file_size
    if args.limit_workspace_mb is not None:
        workspace = args.limit_workspace_mb * MIB
        file_size = workspace if file_size is None else min(file_size, workspace)
    chosen = {
        resource.RLIMIT_NPROC: args.limit_processes,
        resource.RLIMIT_AS: args.limit_memory,
        resource.RLIMIT_FSIZE: file_size,
        resource.RLIMIT_CPU: args.limit_cpu,
    }
    return {which: value for which, value in chosen.items() if value is not None}


def main() -> int:
    parser = argparse.ArgumentParser(prog="chronicle_sandbox")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--unix-socket", help="listen on this Unix socket instead of TCP")
    parser.add_argument(
        "--listen-fd",
        type=int,
        help="serve on this inherited, already listening Unix socket (its path stays outside)",
    )
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
        "--idle-timeout",
        type=float,
        default=IDLE_TIMEOUT,
        help="seconds a connection may send nothing before it is closed",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help="connections served at once (a thread each); more are answered 503",
    )
    parser.add_argument(
        "--token-file", help="read the token from this file, then delete it (preferred)"
    )
    limits = parser.add_argument_group("limits of the shell and every command (not of this server)")
    limits.add_argument("--limit-processes", type=int, help="RLIMIT_NPROC")
    limits.add_argument("--limit-memory", type=int, help="RLIMIT_AS, bytes")
    limits.add_argument("--limit-file-size", type=int, help="RLIMIT_FSIZE, bytes")
    limits.add_argument("--limit-cpu", type=int, help="RLIMIT_CPU, seconds per process")
    limits.add_argument(
        "--limit-workspace-mb",
        type=int,
        help="MB the workspace may grow beyond its size at start (commands past it are stopped, "
        "writes refused)",
    )
    args = parser.parse_args()
    keep_to_itself()
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
    shell = Shell(
        workspace,
        dict(os.environ),
        no_output_timeout=args.no_output_timeout,
        max_output_chars=args.max_output_chars,
        limits=limits_of(args),
        disk_filter=args.limit_workspace_mb is not None,
    )
    quota = None
    if args.limit_workspace_mb is not None:
        quota = WorkspaceQuota(workspace, args.limit_workspace_mb * MIB, shell.processes)
        shell.adopt_orphans()
        quota.watch(shell.stop_commands, shell.reap_orphans, shell.stop_processes)
    executor = Executor(shell, Files(workspace, confine=not args.no_confine, quota=quota))
    state = SandboxState(token, executor)
    serve(
        state,
        host=args.host,
        port=args.port,
        unix_socket=args.unix_socket,
        listen_fd=args.listen_fd,
        max_connections=args.max_connections,
        idle_timeout=args.idle_timeout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
