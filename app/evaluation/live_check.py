"""A task's ``check`` run right after its session, in a fresh sandbox over the session's final
workspace (the agent's files, never this machine's shell: the check runs what the agent
wrote). Recorded as the ``check`` scorer's ``eval.score`` (version 1, "live").

The offline ``check`` (the recorded final workspace change applied to the recorded initial
state, so it works after the workspace is gone) needs the replay engine's workspace-state
events and will be version 2 of the same scorer.
"""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from app.config import Settings
from app.evaluation.scoring import Score
from app.events import EvalScore, Run, RunOutput
from app.runtime.errors import SandboxError
from app.runtime.factory import make_runtime
from app.store import EventStore

NAME = "check"
VERSION = 1
#: How long a check may run.
CHECK_TIMEOUT = 600.0


async def run_check(
    settings: Settings, workspace: Path, session_id: UUID, command: str, runtime: str | None
) -> Score:
    """Run ``command`` in a fresh sandbox on ``workspace``: exit 0 passes."""
    sandbox = make_runtime(settings.runtime_config(), workspace, session_id, runtime)
    try:
        await sandbox.start()
        await sandbox.wait_ready(settings.sandbox_ready_timeout)
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


async def record_check(store: EventStore, session_id: UUID, score: Score, run: str | None) -> None:
    """Append the check's score to the session, after its last event."""
    last = await store.last_seq(session_id)
    event = EvalScore(
        name=NAME, scorer_version=VERSION, score_value=score.value, score_label=score.label,
        explanation=score.explanation, scored_seq=last, evaluation_run=run,
    )  # fmt: skip
    await store.append(session_id, [event])
