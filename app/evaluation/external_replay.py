"""``chronicle eval replay`` of a trial whose agent was a command: the command run again, as
the trial recorded it, in a fresh workspace prepared as the task's, with the gateway serving
the trial's recorded model answers (``chronicle record --replay``, stopped at the first
divergence) — no model is called.

The replay session records the trial's task and epoch (so the report views name its task),
and is tagged with the replay run and scored as any replay (``replaying.record_replay``).
A replay that matched made a real workspace again, so the I/O scorers (the task's check) judge
it there (in a fresh sandbox, as ``eval run`` runs them) rather than carried over from the
recording.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from pydantic import ValidationError

from app.config import Settings
from app.evaluation.external_agent import (
    CommandRecorder,
    output_file,
    task_environment,
    write_prompt,
)
from app.evaluation.replaying import ReplayedTrial, record_replay
from app.evaluation.scoring import Scorer
from app.evaluation.suite import Task
from app.evaluation.workspaces import WorkspaceError, prepare_workspace
from app.events.session_config import EvaluationTrial, SessionConfig
from app.replay import ReplayMode
from app.store import EventStore


@dataclass(frozen=True)
class CommandTrial:
    """A recorded trial of an agent command: its task (with the agent), its command line as
    it ran, and the runtime its run's checks ran in."""

    task: Task
    command: list[str]
    runtime: str | None = None


async def command_trial(store: EventStore, session_id: UUID) -> CommandTrial | None:
    """The trial ``session_id`` if an agent command ran it (None: Chronicle's agent did)."""
    head = await store.read(session_id, limit=1)
    try:
        config = SessionConfig.of_payload(head[0].payload) if head else None
    except ValidationError:
        return None
    if config is None or config.agent != "external" or config.evaluation is None:
        return None
    trial = config.evaluation
    try:
        task = Task.model_validate(trial.task)
    except ValidationError:
        return None
    if task.agent is None or not config.command:
        return None
    runtime = (trial.plan or {}).get("runtime")
    return CommandTrial(task, list(config.command), runtime if isinstance(runtime, str) else None)


async def replay_command_trial(
    store: EventStore,
    settings: Settings,
    recorder: CommandRecorder,
    run: str,
    trial: CommandTrial,
    epoch: int,
    session_id: UUID,
    mode: ReplayMode,
    scorers: Sequence[Scorer],
) -> ReplayedTrial:
    """Replay one recorded trial of an agent command, tag it with the replay run ``run`` and
    score it (see the module)."""
    task = trial.task
    assert task.agent is not None
    replayed = ReplayedTrial(task_id=task.id, epoch=epoch, recorded=session_id, replay=None,
                             matched=False)  # fmt: skip
    workspace = settings.data_dir / "evaluations" / run / task.id / f"epoch-{epoch}"
    try:  # the task recorded its repository's absolute path: no suite directory is needed
        await prepare_workspace(task, workspace, Path("/"))
    except WorkspaceError as exc:
        return replayed.model_copy(update={"error": str(exc)})
    prompt_file = await write_prompt(task, workspace)
    config = EvaluationTrial(task=task.model_dump(mode="json"), epoch=epoch).model_dump(mode="json")
    end = await recorder.replay(
        session_id, trial.command, workspace, task_environment(task, epoch, prompt_file), config,
        mode, task.agent.timeout, output_file(workspace),
    )  # fmt: skip
    if end.result is None:
        return replayed.model_copy(update={"error": end.error})
    return await record_replay(
        store, run, replayed, end.result, scorers, settings=settings, workspace=workspace,
        runtime=trial.runtime,
    )  # fmt: skip
