"""`chronicle worker` processes of one test, and who holds a session's lease."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

from app.store import EventStore
from tests.support.forked import chronicle_popen


class Workers:
    """`chronicle worker` processes of one test, their output in files; all killed at the end."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.started: dict[str, subprocess.Popen[str]] = {}

    def start(self, name: str) -> subprocess.Popen[str]:
        out = (self.logs / f"{name}.log").open("w")
        process = chronicle_popen(
            ["worker", "--id", name],
            env=self.env, stdout=out, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        out.close()
        self.started[name] = process
        return process

    def output(self) -> str:
        return "\n".join(
            f"--- {name}:\n{(self.logs / f'{name}.log').read_text()}" for name in self.started
        )

    def kill_all(self) -> None:
        for process in self.started.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)


async def lease_owner(store: EventStore, session: uuid.UUID) -> str | None:
    """The worker holding the session's lease (None: nobody, or no row)."""
    return await store.pool.fetchval(  # type: ignore[no-any-return]
        "SELECT owner FROM session_leases WHERE session_id = $1", session
    )
