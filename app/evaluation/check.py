"""The ``check`` scorer: the task's check command run in a fresh sandbox over the session's
final workspace (the agent's files, never this machine's shell: the check runs what the agent
wrote); exit 0 passes. It needs a sandbox, so it is an I/O scorer (``pure = False``).

Which final workspace depends on what the context gives it, and the score says which, as the
scorer's version:

- version 1, "live": a trial scored as it ends has its own workspace still on disk;
- version 2, "offline": later, the workspace is rebuilt from the log in a temporary directory
  that is removed afterwards: the recorded start (``workspace.snapshot``, restored by
  ``app.runtime.workspace_restore``: a git start is cloned from the recorded workspace or, when
  that is gone, from the task's repository) with the last recorded change (``workspace.diff``,
  cumulative against the start) applied.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from uuid import UUID

from app.config import Settings
from app.evaluation.scoring import Score, ScoredSession, ScoringContext, ScoringError
from app.events import Run, RunOutput, WorkspaceSnapshot
from app.runtime.errors import SandboxError
from app.runtime.factory import make_runtime
from app.runtime.workspace_restore import apply_change, restore
from app.runtime.workspace_state import WorkspaceStateError, is_git_repository

#: How long a check may run.
CHECK_TIMEOUT = 600.0
LIVE = 1
OFFLINE = 2


class Check:
    """The task's check on the session's final workspace (see the module)."""

    name = "check"
    version = OFFLINE
    pure = False

    async def judge(self, context: ScoringContext) -> Score | None:
        session = context.session
        if session.task is None or session.task.check is None:
            return None
        if context.settings is None:
            raise ScoringError("the check scorer runs a sandbox: it needs the settings")
        command = session.task.check
        if context.workspace is not None:  # the trial's runtime, as its run chose it
            score = await run_check(
                context.settings, context.workspace, session.session_id, command, context.runtime
            )
            return score.model_copy(update={"scorer_version": LIVE})
        runtime = context.runtime or session.config.runtime or None
        return await _offline(context.settings, session, command, runtime)


async def run_check(
    settings: Settings, workspace: Path, session_id: UUID, command: str, runtime: str | None
) -> Score:
    """Run ``command`` in a fresh sandbox on ``workspace``: exit 0 passes."""
    sandbox = make_runtime(settings.runtime_config(), workspace, session_id, runtime)
    try:
        await sandbox.start()
        await sandbox.wait_ready(settings.sandbox.ready_timeout)
        answer = await sandbox.execute(Run(command=command, timeout=CHECK_TIMEOUT))
    except SandboxError as exc:
        return Score(label="error", explanation=f"the check could not run: {exc}")
    finally:
        await sandbox.close()
    if not isinstance(answer, RunOutput) or answer.exit_code is None:
        why = getattr(answer, "message", "") or "it did not finish"
        return Score(label="error", explanation=f"the check could not run: {why}")
    tail = answer.output.strip()[-300:]
    said = f": {tail}" if tail else ""
    return Score.verdict(answer.exit_code == 0, f"`{command}` exited {answer.exit_code}{said}")


async def _offline(
    settings: Settings, session: ScoredSession, command: str, runtime: str | None
) -> Score:
    """The check on the final workspace rebuilt from the log (version 2)."""
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
        await restore(start, target, repository=repository, sandbox_uid=settings.sandbox.docker.uid)
        await apply_change(target, str(diff.payload.get("diff") or ""))
        return await run_check(settings, target, session.session_id, command, runtime)
    except WorkspaceStateError as exc:
        return Score(label="error", explanation=f"the final workspace cannot be rebuilt: {exc}")
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, ignore_errors=True)


def _repository(session: ScoredSession) -> Path | None:
    """Where a git start's commit can be cloned from: the recorded workspace, or the task's
    repository (recorded as an absolute path by ``chronicle eval run``)."""
    for candidate in (session.config.workspace, session.task and session.task.repo):
        if isinstance(candidate, str) and is_git_repository(Path(candidate)):
            return Path(candidate)
    return None
