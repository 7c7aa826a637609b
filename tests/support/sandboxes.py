"""Real sandboxes for the tests: the settings they run with, starting one of either kind, and
talking to its action server around the runtime."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

from app.config import Settings
from app.events import Run, RunOutput
from app.runtime import Runtime, SandboxClient
from app.runtime.factory import make_runtime
from app.runtime.kinds import KINDS

#: Every runtime the contract suite runs against (tests/contract/runtime/): every registered kind.
RUNTIME_KINDS = tuple(KINDS)
#: The fixture a kind's sandboxes need first (a Docker engine), by kind.
NEEDS = {"docker": "docker_ready"}


def sandbox_settings(tmp_path: Path) -> Settings:
    """A quick no-output timeout (commands waiting for input answer in 1.5 s) and a pids limit
    a fork bomb meets soon; the data dir under ``tmp_path``."""
    return Settings(
        data_dir=tmp_path / "data", sandbox_no_output_timeout=1.5, sandbox_pids_limit=256
    )


@contextlib.asynccontextmanager
async def started_runtime(kind: str, workspace: Path, tmp_path: Path) -> AsyncIterator[Runtime]:
    """A started, ready sandbox of ``kind`` on ``workspace``, made by the factory as a session's
    is (``sandbox_settings``), closed at the end. Request the fixture ``NEEDS`` names for the
    kind first (a Docker one needs the engine)."""
    config = sandbox_settings(tmp_path).runtime_config()
    sandbox = make_runtime(config, workspace, uuid.uuid4(), kind)
    await sandbox.start()
    try:
        await sandbox.wait_ready(60)
        yield sandbox
    finally:
        await sandbox.close()


def client_of(runtime: Runtime) -> SandboxClient:
    """The runtime's client of its action server, to send what ``execute`` never would."""
    client = getattr(runtime, "client", None)
    assert isinstance(client, SandboxClient)
    return client


async def still_works(runtime: Runtime) -> None:
    """The sandbox still runs a command after whatever the test did to it."""
    result = await runtime.execute(Run(command="echo still here"))
    assert isinstance(result, RunOutput) and result.output == "still here\n", result
