"""A task whose agent is a command (``agent: {command: [...], timeout: S}`` on the task, or on
the suite for every task): how ``chronicle eval run`` hands the command its task.

The command runs in the task's fresh workspace (prepared as for Chronicle's agent) under
``chronicle record``'s machinery, so its model calls are ``llm.call`` events of an
``external`` session tagged with the run, task and epoch, which the scorers, the report and
``eval score`` read as they read Chronicle's own sessions. The task reaches the command three
ways, so any agent's command line can take it:

- in its arguments: ``{prompt}`` in an argument is replaced by the prompt, ``{prompt_file}``
  by the path of a file holding it (beside the workspace, so it is no change of the agent's),
  ``{suite_dir}`` by the suite file's directory (where an agent script beside the suite is:
  the command runs in the workspace, so a relative path is the workspace's);
- in its environment: ``CHRONICLE_TASK_PROMPT``, ``CHRONICLE_TASK_PROMPT_FILE``,
  ``CHRONICLE_TASK_ID`` and ``CHRONICLE_TASK_EPOCH``, besides the gateway's
  ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY``;
- its output (stdout and stderr) goes to ``<workspace>.log`` beside the workspace.

Recording is another package's (``app.external``, beside this one), reached through the
``CommandRecorder`` protocol that the command line wires in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

from app.evaluation.suite import AgentCommand, Suite, Task
from app.replay import ReplayMode, ReplayResult

PROMPT = "{prompt}"
PROMPT_FILE = "{prompt_file}"
SUITE_DIR = "{suite_dir}"


class CommandEnd(Protocol):
    """How a trial's command ended (``app.external.eval_trials.RecordedTrial``)."""

    @property
    def session_id(self) -> UUID | None: ...
    @property
    def outcome(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def stops_run(self) -> bool: ...


class CommandReplay(Protocol):
    """A trial's command replayed (``app.external.eval_trials.ReplayedTrial``)."""

    @property
    def result(self) -> ReplayResult | None: ...
    @property
    def error(self) -> str | None: ...


class CommandRecorder(Protocol):
    """Runs and records trials' commands through a running server's gateway."""

    async def problem(self, commands: Sequence[Sequence[str]]) -> str | None:
        """What would fail every trial alike, in a sentence; None when nothing would."""
        ...

    async def record(
        self,
        command: Sequence[str],
        workspace: Path,
        environment: Mapping[str, str],
        config: Mapping[str, Any],
        seconds: float,
        output: Path,
    ) -> CommandEnd:
        """Run ``command`` in ``workspace`` as a recorded session whose ``session.created``
        config adds ``config``; stop it after ``seconds``; its output into ``output``."""
        ...

    async def replay(
        self,
        recording: UUID,
        command: Sequence[str],
        workspace: Path,
        environment: Mapping[str, str],
        config: Mapping[str, Any],
        mode: ReplayMode,
        seconds: float,
        output: Path,
    ) -> CommandReplay:
        """Run ``command`` again as a replay of the session ``recording``: the gateway serves
        the recorded answers; otherwise as ``record``."""
        ...


def command_line(agent: AgentCommand, prompt: str, prompt_file: Path, suite_dir: Path) -> list[str]:
    """The command with ``{suite_dir}``, ``{prompt_file}`` and ``{prompt}`` replaced in each
    argument, the prompt last so that its own text is never read for them (no other braces
    are read: an argument is not a format string)."""
    return [
        part.replace(SUITE_DIR, str(suite_dir))
        .replace(PROMPT_FILE, str(prompt_file))
        .replace(PROMPT, prompt)
        for part in agent.command
    ]


def task_environment(task: Task, epoch: int, prompt_file: Path) -> dict[str, str]:
    """The variables that hand the command its task."""
    return {
        "CHRONICLE_TASK_ID": task.id,
        "CHRONICLE_TASK_EPOCH": str(epoch),
        "CHRONICLE_TASK_PROMPT": task.prompt,
        "CHRONICLE_TASK_PROMPT_FILE": str(prompt_file),
    }


def agent_commands(suite: Suite) -> list[list[str]]:
    """The commands the suite's tasks run (none: every task is Chronicle's agent's)."""
    return [task.agent.command for task in suite.tasks if task.agent is not None]


async def agents_problem(suite: Suite, recorder: CommandRecorder | None) -> str | None:
    """Why the suite's agent commands cannot run (None: they can, or there are none)."""
    commands = agent_commands(suite)
    if not commands:
        return None
    if recorder is None:
        return (
            "the suite names agent commands, which run only through the model gateway of a "
            "running chronicle serve; start one and run the suite with chronicle eval run"
        )
    return await recorder.problem(commands)


async def run_agent_command(
    recorder: CommandRecorder,
    agent: AgentCommand,
    task: Task,
    epoch: int,
    workspace: Path,
    suite_dir: Path,
    config: Mapping[str, Any],
) -> CommandEnd:
    """Run the task's command in its prepared ``workspace`` as a recorded session whose
    ``session.created`` config adds ``config`` (the trial's evaluation keys)."""
    prompt_file = await write_prompt(task, workspace)
    return await recorder.record(
        command_line(agent, task.prompt, prompt_file, suite_dir),
        workspace,
        task_environment(task, epoch, prompt_file),
        config,
        agent.timeout,
        output_file(workspace),
    )


async def write_prompt(task: Task, workspace: Path) -> Path:
    """The task's prompt in a file beside its workspace; the file's path."""
    prompt_file = workspace.with_name(f"{workspace.name}.prompt")
    await asyncio.to_thread(prompt_file.write_text, task.prompt, encoding="utf-8")
    return prompt_file


def output_file(workspace: Path) -> Path:
    """Where the command's output goes: beside its workspace."""
    return workspace.with_name(f"{workspace.name}.log")
