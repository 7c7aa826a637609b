"""The ``check`` scorer, offline (version 2): the task's check run on the session's final
workspace rebuilt from the log, in a fresh sandbox, after the session's own is gone.

The final workspace is the recorded start (``workspace.snapshot``, restored by
``app.runtime.workspace_restore``: a git start is cloned from the recorded workspace or, when
that is gone, from the task's repository) with the last recorded change
(``workspace.diff``, cumulative against the start) applied, in a temporary directory that is
removed afterwards. It needs a sandbox, so it is not a pure ``Scorer``.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from app.config import Settings
from app.evaluation.live_check import run_check
from app.evaluation.scoring import Score, ScoredSession
from app.events import WorkspaceSnapshot
from app.runtime.workspace_restore import apply_change, restore
from app.runtime.workspace_state import WorkspaceStateError, is_git_repository

NAME = "check"
VERSION = 2


def _repository(session: ScoredSession) -> Path | None:
    """Where a git start's commit can be cloned from: the recorded workspace, or the task's
    repository (recorded as an absolute path by ``chronicle eval run``)."""
    for candidate in (session.config.workspace, session.task and session.task.repo):
        if isinstance(candidate, str) and is_git_repository(Path(candidate)):
            return Path(candidate)
    return None


async def score_check(
    settings: Settings, session: ScoredSession, runtime: str | None = None
) -> Score | None:
    """The check's verdict on the recorded final workspace (None: the task has no check)."""
    if session.task is None or session.task.check is None:
        return None
    snapshot = next((e for e in session.events if e.kind == "workspace.snapshot"), None)
    diff = next((e for e in reversed(session.events) if e.kind == "workspace.diff"), None)
    if snapshot is None or diff is None:
        return Score(label="error", explanation="the session recorded no workspace state")
    start = snapshot.event()
    assert isinstance(start, WorkspaceSnapshot)
    scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="chronicle-check-"))
    target = scratch / "workspace"
    try:
        repository = await asyncio.to_thread(_repository, session)
        await restore(start, target, repository=repository, sandbox_uid=settings.sandbox_uid)
        await apply_change(target, str(diff.payload.get("diff") or ""))
        runtime = runtime or session.config.runtime or None
        return await run_check(settings, target, session.session_id, session.task.check, runtime)
    except WorkspaceStateError as exc:
        return Score(label="error", explanation=f"the final workspace cannot be rebuilt: {exc}")
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, ignore_errors=True)
