"""Attacks on a local sandbox from inside it, as a command or an agent would try them.

Shared by the root tests (tests/system/runtime/test_local_jail.py) and the script that
repeats them as a non-root user (``nonroot_jail.py``). Each attack returns plain JSON-able
facts; the tests say what they must be.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from app.events import (
    ErrorObservation,
    FileEdit,
    FileEditOutput,
    FileRead,
    FileReadOutput,
    FileWrite,
    Run,
    RunOutput,
)
from app.runtime import LocalRuntime, SandboxError
from tests.support.waiting import until

PROBE = Path(__file__).with_name("pg_probe.py")
SECRET = "TOP-SECRET-outside-the-workspace"
OUTSIDE_ONLY = "outside-only-marker.txt"
#: Variables bash sets itself, besides those the sandbox is given.
SHELL_OWN = {"PWD", "OLDPWD", "SHLVL", "_", "PS1", "PS2", "PROMPT_COMMAND", "HISTFILE"}
SHELL_OWN |= {"PAGER", "GIT_PAGER", "TERM", "COLUMNS", "LINES"}
RENAME_EXCHANGE = 2
AT_FDCWD = -100


def _text(path: Path) -> str:
    return path.read_text()


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def host_can_spawn() -> bool:
    try:
        process = await asyncio.create_subprocess_exec("true")
        async with asyncio.timeout(10):
            return await process.wait() == 0
    except (OSError, TimeoutError):
        return False


async def run(runtime: LocalRuntime, command: str, timeout: float = 60) -> str:
    result = await runtime.execute(Run(command=command, timeout=timeout))
    if isinstance(result, RunOutput):
        return result.output
    assert isinstance(result, ErrorObservation), result
    return f"[error] {result.message}"


async def postgres(
    runtime: LocalRuntime, unix: list[str], tcp: list[tuple[str, int]]
) -> list[dict[str, Any]]:
    """The stdlib PostgreSQL client from inside, against these sockets and ports."""
    await runtime.upload("pg_probe.py", PROBE.read_bytes())
    targets = json.dumps({"unix": unix, "tcp": tcp})
    output = await run(runtime, f"python3 pg_probe.py '{targets}'", timeout=120)
    exists = await run(runtime, " ".join(f"test -e '{p}' && echo 'EXISTS {p}';" for p in unix))
    results: list[dict[str, Any]] = json.loads(output.strip().splitlines()[-1])
    for line in exists.splitlines():
        if line.startswith("EXISTS "):
            results.append({"target": line[7:], "exists_inside": True})
    return results


async def mount_escape(runtime: LocalRuntime, host_file: Path) -> dict[str, Any]:
    """Bind the jail's / elsewhere, remount it read-write, write a host file through it.

    Before the jail dropped capabilities this worked as root: the bind of / is the host's
    root file system without the jail's /tmp on top, so ``host_file`` (under the host's /tmp)
    was reachable and writable.
    """
    before = _text(host_file)
    script = (
        "mkdir -p /tmp/m; mount --bind / /tmp/m && mount -o remount,rw,bind /tmp/m "
        f"&& echo REMOUNTED && echo pwned > /tmp/m{host_file}; "
        "mount -t tmpfs none /tmp/m 2>&1 && echo MOUNTED_TMPFS; "
        "unshare -U true 2>&1 && echo NEW_USERNS; "
        "grep CapEff /proc/self/status"
    )
    output = await run(runtime, script)
    return {"output": output, "before": before, "after": _text(host_file)}


async def present(runtime: LocalRuntime, paths: list[str]) -> list[str]:
    """Which of ``paths`` exist inside the sandbox."""
    checks = " ".join(f"test -e '{p}' && echo 'PRESENT {p}';" for p in paths)
    return [line[8:] for line in (await run(runtime, checks + " true")).splitlines()
            if line.startswith("PRESENT ")]  # fmt: skip


async def readable(runtime: LocalRuntime, paths: list[str]) -> dict[str, str]:
    """What ``cat`` (or ``ls`` for a directory) shows of each path inside."""
    shown = {}
    for path in paths:
        shown[path] = await run(runtime, f"cat '{path}' 2>&1 || ls -la '{path}' 2>&1")
    return shown


async def environment(runtime: LocalRuntime) -> dict[str, Any]:
    """Every variable the shell sees, and every process's environ and command line inside."""
    names = await run(runtime, "env -0 | tr '\\0' '\\n' | cut -d= -f1")
    dump = "proc-dump.bin"
    await run(runtime, f"cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline > {dump} 2>/dev/null; true")
    data = (runtime.workspace / dump).read_bytes()
    (runtime.workspace / dump).unlink()
    token = runtime.client.token if runtime.client else ""
    return {
        "names": sorted(set(names.split())),
        "env": await run(runtime, "env"),
        "token_in_proc": bool(token) and token.encode() in data,
        "token_file": await present(runtime, ["/tmp/.chronicle-token"]),
        "server_memory": await run(
            runtime,
            "cat /proc/$PPID/environ /proc/$PPID/mem >/dev/null 2>&1 && echo READ || echo DENIED",
        ),
    }


def _marked(marker: str) -> list[int]:
    """Processes on this machine whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
    return found


async def fork_loop(runtime: LocalRuntime, seconds: float = 4.0) -> dict[str, Any]:
    """A fork bomb in the background; meanwhile: how many, and can the host still fork?"""
    marker = f"forkbomb-{os.getpid()}-{time.monotonic_ns()}.sh"
    # the script forks once, in the background, and returns: its own fork of both halves
    # of the first pipeline could find the limit already filled by the first half (a loaded
    # machine), retry for the whole timeout and never say LAUNCHED
    (runtime.workspace / marker).write_text("bomb() { bomb | bomb & }\nbomb &\n")
    started = await run(runtime, f"bash ./{marker}; echo LAUNCHED", timeout=30)
    most = 0
    host_spawns_ok = True
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # sampled for ``seconds``: the window is the test
        most = max(most, len(_marked(marker)))
        host_spawns_ok = host_spawns_ok and await host_can_spawn()
        await asyncio.sleep(0.1)
    try:
        async with asyncio.timeout(120):
            after = await run(runtime, "echo alive", timeout=30)
    except (SandboxError, TimeoutError) as exc:
        after = f"[{type(exc).__name__}] {exc}"
    await runtime.close()
    with contextlib.suppress(AssertionError):  # what is left is reported, and checked there
        await until(lambda: not _marked(marker), timeout=10, what="the fork loop gone")
    return {
        "started": started,
        "most_at_once": most,
        "host_spawns_ok": host_spawns_ok,
        "after": after,
        "left_after_close": len(_marked(marker)),
    }


async def memory_hog(runtime: LocalRuntime) -> dict[str, Any]:
    hog = "python3 -c \"b = bytearray(1024 ** 3); print('ALLOCATED', len(b))\"; echo exit=$?"
    return {"output": await run(runtime, hog), "after": await run(runtime, "echo alive")}


async def file_size(runtime: LocalRuntime) -> dict[str, Any]:
    output = await run(runtime, "head -c 3000000 /dev/zero > big.bin; echo exit=$?")
    return {"output": output, "size": (runtime.workspace / "big.bin").stat().st_size}


async def cpu_time(runtime: LocalRuntime) -> dict[str, Any]:
    started = time.monotonic()
    output = await run(runtime, "python3 -c 'while True: pass'; echo exit=$?", timeout=60)
    elapsed = time.monotonic() - started
    limits = await run(runtime, "grep 'Max cpu time' /proc/self/limits /proc/$PPID/limits")
    return {"output": output, "elapsed": elapsed, "limits": limits}


def _exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (renameat2 RENAME_EXCHANGE): one of them is always there."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(AT_FDCWD, bytes(a), AT_FDCWD, bytes(b), RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(a))


def prepare_race(workspace: Path, outside: Path) -> None:
    """``sub`` (a real directory) and ``sub-link`` (a symlink to ``outside``) in the workspace."""
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "secret.txt").write_text(SECRET + "\n")
    (outside / OUTSIDE_ONLY).write_text(SECRET + "\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "secret.txt").write_text("harmless\n")
    (workspace / "sub-link").symlink_to(outside)


async def symlink_race(
    runtime: LocalRuntime, outside: Path, seconds: float = 10.0
) -> dict[str, Any]:
    """Swap ``sub`` between a directory and a symlink out, while file actions go through it.

    Against the server before it opened paths beneath the workspace (realpath check, then
    open), this read the secret and wrote outside within 0.1 s.
    """
    workspace = runtime.workspace
    prepare_race(workspace, outside)
    outside_before = _names(outside)
    stop = threading.Event()
    swaps = 0

    def swap() -> None:
        nonlocal swaps
        while not stop.is_set():
            _exchange(workspace / "sub", workspace / "sub-link")
            swaps += 1

    flipper = threading.Thread(target=swap, daemon=True)
    leaks: list[str] = []
    counts = {"ok": 0, "refused": 0}

    def saw(text: str | bytes, what: str) -> None:
        text = text.decode(errors="replace") if isinstance(text, bytes) else text
        if SECRET in text or OUTSIDE_ONLY in text:
            leaks.append(f"{what}: {text[:200]}")

    async def act(step: int) -> None:
        choice = step % 6
        try:
            if choice == 0:
                read = await runtime.execute(FileRead(path="sub/secret.txt"))
                if isinstance(read, FileReadOutput):
                    saw(read.content, "file.read")
                    counts["ok"] += 1
                else:
                    counts["refused"] += 1
            elif choice == 1:
                written = await runtime.execute(FileWrite(path=f"sub/w{step}.txt", content="w"))
                counts["ok" if not isinstance(written, ErrorObservation) else "refused"] += 1
            elif choice in (2, 3):
                path = "sub" if choice == 2 else "sub/secret.txt"
                viewed = await runtime.execute(FileEdit(command="view", path=path))
                if isinstance(viewed, FileEditOutput):
                    saw(viewed.content, f"view {path}")
                    counts["ok"] += 1
                else:
                    counts["refused"] += 1
            elif choice == 4:
                saw(await runtime.download("sub/secret.txt"), "download")
                counts["ok"] += 1
            else:
                await runtime.upload(f"sub/u{step}.bin", b"uploaded")
                counts["ok"] += 1
        except ValueError:  # download / upload refused
            counts["refused"] += 1

    flipper.start()
    try:
        deadline = time.monotonic() + seconds
        step = 0
        while time.monotonic() < deadline:
            await asyncio.gather(act(step), act(step + 1))
            step += 2
    finally:
        stop.set()
        flipper.join()
    return {
        "swaps": swaps,
        "counts": counts,
        "leaks": leaks,
        "outside_before": outside_before,
        "outside_after": _names(outside),
        "secret_after": _text(outside / "secret.txt"),
    }
