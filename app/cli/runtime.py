"""`chronicle runtime ...`: the Docker sandboxes on this engine, or on every engine of
``docker_hosts``."""

from __future__ import annotations

import argparse
import asyncio
import re

from app.config import Settings

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> float:
    """Seconds from '90', '90s', '30m', '2h' or '1d'."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 90s, 30m, 2h or 1d")
    return float(match.group(1)) * UNITS[match.group(2) or "s"]


def add_parsers(commands: argparse._SubParsersAction) -> None:
    runtime = commands.add_parser("runtime", help="list and reap sandboxes")
    sub = runtime.add_subparsers(dest="runtime_command", required=True, metavar="COMMAND")
    sub.add_parser(
        "ls",
        help="the Docker sandboxes Chronicle started (on every docker_hosts engine), idle time",
    )
    reap = sub.add_parser("reap", help="remove sandboxes whose heartbeat is stale")
    reap.add_argument(
        "--older-than",
        type=duration,
        default=None,
        metavar="DURATION",
        help="quiet for longer than this (default: sandbox_reap_after, 2h)",
    )
    runtime.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    import docker.errors

    if settings.sandbox.docker.hosts:
        return _on_every_host(args, settings)
    from app.runtime.docker.reaper import list_sandboxes, reap

    try:
        if args.runtime_command == "ls":
            sandboxes = asyncio.run(list_sandboxes())
            if not sandboxes:
                print("no sandboxes")
            for info in sandboxes:
                idle = "-" if info.idle_seconds is None else f"{info.idle_seconds:.0f}s"
                print(
                    f"{info.name}  {info.status:<8}  idle {idle:>7}  created {info.created:%F %T}"
                )
            return 0
        older_than = args.older_than if args.older_than is not None else settings.sandbox_reap_after
        removed = asyncio.run(reap(older_than))
        for info in removed:
            print(f"removed {info.name}")
        print(f"{len(removed)} sandbox(es) removed")
        return 0
    except docker.errors.DockerException as exc:
        print(f"error: cannot reach the Docker engine ({exc}); is dockerd running?")
        return 1


def _on_every_host(args: argparse.Namespace, settings: Settings) -> int:
    """``ls`` and ``reap`` over the pool of ``docker_hosts``: each host's health, then its
    sandboxes; a host that does not answer is named, and the others are still served."""
    from app.runtime.docker.host_pool import DockerHostPool
    from app.runtime.provisioner import reap

    pool = DockerHostPool(settings.runtime_config().docker)
    if args.runtime_command == "ls":

        async def survey():  # type: ignore[no-untyped-def]
            return await pool.health(), await pool.list_sandboxes()

        health, sandboxes = asyncio.run(survey())
        for host in health:
            state = (
                f"runs {host.running} of {host.capacity}"
                if host.reachable
                else f"unreachable ({host.problem})"
            )
            print(f"host {host.host}  {state}")
        if not sandboxes:
            print("no sandboxes")
        for found in sandboxes:
            idle = "-" if found.idle_seconds is None else f"{found.idle_seconds:.0f}s"
            print(
                f"{found.sandbox_id}  {found.status:<8}  idle {idle:>7}  "
                f"created {found.created:%F %T}  on {found.host}"
            )
        return 0 if all(host.reachable for host in health) else 1
    older_than = args.older_than if args.older_than is not None else settings.sandbox_reap_after
    removed = asyncio.run(reap(pool, older_than))
    for listed in removed:
        print(f"removed {listed.sandbox_id} on {listed.host}")
    print(f"{len(removed)} sandbox(es) removed")
    return 0
