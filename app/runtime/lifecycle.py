"""Starting a session's sandbox with its progress in the log: starting, ready (with the image
digest), or failed with the reason."""

from __future__ import annotations

import time
from uuid import UUID

from app.events import RuntimeStatus
from app.runtime.errors import SandboxError
from app.runtime.protocol import Runtime
from app.store import EventStore


def describe(runtime: Runtime) -> tuple[str, str, str | None]:
    """(runtime name, sandbox id, image digest) as far as the runtime knows them."""
    name = str(getattr(runtime, "name", type(runtime).__name__))
    sandbox_id = str(getattr(runtime, "sandbox_id", "") or "")  # a container's name, say
    client = getattr(runtime, "client", None)
    if not sandbox_id and client is not None:
        sandbox_id = getattr(client, "base_url", "")
    return name, sandbox_id, getattr(runtime, "image_id", None)


async def start_sandbox(
    store: EventStore, session_id: UUID, runtime: Runtime, *, ready_timeout: float
) -> None:
    """Start ``runtime`` for the session, recording ``runtime.starting`` and then
    ``runtime.ready`` or ``runtime.failed``; a failure is raised after it is recorded."""
    name, _, _ = describe(runtime)
    await store.append(session_id, [RuntimeStatus(kind="runtime.starting", runtime=name)])
    started = time.monotonic()
    try:
        await runtime.start()
        await runtime.wait_ready(ready_timeout)
    except SandboxError as exc:
        await store.append(
            session_id, [RuntimeStatus(kind="runtime.failed", runtime=name, message=str(exc))]
        )
        raise
    name, sandbox_id, digest = describe(runtime)
    elapsed = time.monotonic() - started
    await store.append(
        session_id,
        [
            RuntimeStatus(
                kind="runtime.ready",
                runtime=name,
                sandbox_id=sandbox_id,
                image_digest=digest,
                message=f"ready in {elapsed:.2f} s",
            )
        ],
    )
