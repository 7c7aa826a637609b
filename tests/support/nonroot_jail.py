"""The local jail's attacks, run by a non-root user (the test starts this as one).

    python nonroot_jail.py '{"workspace": ..., "outside": ..., "unix": [...], ...}'

Starts a LocalRuntime on the user's own workspace, tries every attack of ``jail_attacks``
and prints one JSON object with what happened, for the test to assert on. As a non-root user
no cgroup can be made here, so the limits come from resource limits set inside the jail's
own user namespace (RLIMIT_NPROC then counts that namespace's processes only).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from app.runtime import LocalRuntime
from app.runtime.local.limits import SandboxLimits
from tests.support import jail_attacks
from tests.support.pg_probe import listening_tcp

LIMITS = SandboxLimits(
    processes=64, memory_bytes=256 * 1024**2, file_size_bytes=1024**2, cpu_seconds=2
)


async def attack(args: dict[str, Any]) -> dict[str, Any]:
    workspace = Path(args["workspace"])
    runtime = LocalRuntime(
        workspace, jail="bwrap", limits=LIMITS, env={"CHRONICLE_PASSED": "passed-value"}
    )
    await runtime.start()
    result: dict[str, Any] = {"uid": os.getuid()}
    try:
        await runtime.wait_ready(30)
        result["cgroup"] = runtime.cgroup is not None
        result["environment"] = await jail_attacks.environment(runtime)
        result["postgres"] = await jail_attacks.postgres(runtime, args["unix"], listening_tcp())
        result["mount"] = await jail_attacks.mount_escape(runtime, Path(args["host_file"]))
        result["present"] = await jail_attacks.present(runtime, args["absent"])
        result["readable"] = await jail_attacks.readable(runtime, args["unreadable"])
        result["memory"] = await jail_attacks.memory_hog(runtime)
        result["file_size"] = await jail_attacks.file_size(runtime)
        result["cpu"] = await jail_attacks.cpu_time(runtime)
        result["race"] = await jail_attacks.symlink_race(
            runtime, Path(args["outside"]), seconds=args["race_seconds"]
        )
        result["fork_loop"] = await jail_attacks.fork_loop(runtime)  # closes the runtime
    finally:
        await runtime.close()
    return result


def main() -> None:
    print(json.dumps(asyncio.run(attack(json.loads(sys.argv[1])))))


if __name__ == "__main__":
    main()
