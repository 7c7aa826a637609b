"""A session's workspace in its log: the start recorded when the session is created, the
change recorded when each run ends (``app.runtime.workspace_state`` does the reading).

Recording never stops a session: a workspace git cannot read is recorded as such, with the
reason, and the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from uuid import UUID

from app.config import Settings
from app.events import WorkspaceDiff, WorkspaceSnapshot
from app.runtime.workspace_restore import baseline_from_snapshot
from app.runtime.workspace_state import (
    Baseline,
    WorkspaceStateError,
    capture,
    empty_snapshot,
    final_diff,
    is_empty_directory,
)
from app.store import TRANSIENT_ERRORS, EventStore, StoreError

logger = logging.getLogger(__name__)


def fresh_workspace_start(settings: Settings) -> WorkspaceSnapshot:
    """The start of a workspace made empty for a new session: recorded with the session's
    first events, no git started (``empty_snapshot``: what ``capture`` records of it)."""
    return empty_snapshot(settings.workspace_snapshot_max_bytes)


async def record_workspace_start(
    store: EventStore,
    session_id: UUID,
    workspace: Path,
    settings: Settings,
    *,
    keep_baseline: bool = True,
) -> Baseline | None:
    """Append the workspace's ``workspace.snapshot``; the baseline for the end's diff.
    ``keep_baseline=False`` (the API, whose worker reads the start back from the log): none
    is kept, and an empty directory is recorded without starting git (``empty_snapshot``,
    what ``capture`` would record of it), so that creating sessions in bursts is not a git
    process per request."""
    if not keep_baseline and await asyncio.to_thread(is_empty_directory, workspace):
        await store.append(session_id, [empty_snapshot(settings.workspace_snapshot_max_bytes)])
        return None
    try:
        snapshot, baseline = await capture(
            workspace,
            max_bytes=settings.workspace_snapshot_max_bytes,
            timeout=settings.workspace_snapshot_timeout,
        )
    except (WorkspaceStateError, OSError) as exc:
        snapshot, baseline = WorkspaceSnapshot(vcs="unavailable", message=str(exc)), None
    try:
        await store.append(session_id, [snapshot])
    except BaseException:
        if baseline is not None:
            baseline.close()
        raise
    if not keep_baseline and baseline is not None:
        baseline.close()
        return None
    return baseline


async def workspace_baseline(
    store: EventStore, session_id: UUID, workspace: Path, settings: Settings
) -> Baseline | None:
    """The recorded start of a session being resumed, or None if it recorded none."""
    recorded = [e for e in await store.read(session_id) if e.kind == "workspace.snapshot"]
    if not recorded:
        return None
    snapshot = WorkspaceSnapshot.model_validate(recorded[0].payload)
    try:
        return await baseline_from_snapshot(
            snapshot,
            workspace,
            timeout=settings.workspace_snapshot_timeout,
            sandbox_uid=settings.sandbox.docker.uid,
        )
    except (WorkspaceStateError, OSError) as exc:
        logger.warning("session %s: no workspace baseline to resume with: %s", session_id, exc)
        return None


async def record_workspace_end(
    store: EventStore,
    session_id: UUID,
    baseline: Baseline | None,
    settings: Settings,
    *,
    reason: str,
) -> None:
    """Append the run's ``workspace.diff`` against the recorded start (best effort: a run
    being torn down, e.g. by a lost database, does not wait on it for long)."""
    if baseline is None:
        return
    try:
        try:
            diff = await final_diff(
                baseline, reason=reason, leave_out=settings.workspace_diff_leave_out
            )
        except (WorkspaceStateError, OSError) as exc:
            diff = WorkspaceDiff(reason=reason, message=f"the change was not recorded: {exc}")
        with contextlib.suppress(StoreError, *TRANSIENT_ERRORS):
            async with asyncio.timeout(settings.workspace_snapshot_timeout):
                await store.append(session_id, [diff])
    finally:
        await asyncio.to_thread(baseline.close)
