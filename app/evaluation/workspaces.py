"""A task's workspace, prepared before its session: the repository at its commit, the task's
files, then its setup commands.

The setup commands are the suite author's, like a Makefile's: they run on this machine in the
workspace (before any agent action), not in the sandbox. The files are written beneath the
workspace only: a path that would leave it through a link the repository holds is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from app.errors import ChronicleError
from app.evaluation.suite import Task

#: How long one setup command or git step may take.
SETUP_TIMEOUT = 600.0


class WorkspaceError(ChronicleError):
    """The task's workspace could not be prepared; the message says which step and why."""


async def _run(argv: list[str] | str, cwd: Path, what: str, seconds: float) -> None:
    if isinstance(argv, str):
        process = await asyncio.create_subprocess_shell(
            argv, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    else:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        output, _ = await asyncio.wait_for(process.communicate(), seconds)
    except TimeoutError:
        # the whole group: a shell's children (``sleep``) would keep the output pipe open
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        raise WorkspaceError(f"{what} did not finish within {seconds:g} s") from None
    if process.returncode != 0:
        tail = output.decode(errors="replace").strip()[-500:]
        raise WorkspaceError(f"{what} exited {process.returncode}: {tail}")


def _write_files(workspace: Path, files: dict[str, str]) -> None:
    root = workspace.resolve()
    for relative, content in files.items():
        target = root / relative
        if not target.parent.resolve().is_relative_to(root) or (
            target.is_symlink() and not target.resolve().is_relative_to(root)
        ):
            raise WorkspaceError(f"file {relative!r} would be written outside the workspace")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_text(content, encoding="utf-8")


def _make_room(workspace: Path, repo: str | None, suite_dir: Path) -> Path | None:
    """Check the workspace is new and make its parent; the repository's path, if any."""
    if workspace.exists():
        raise WorkspaceError(f"the workspace {workspace} exists already; use another run name")
    workspace.parent.mkdir(parents=True, exist_ok=True)
    if repo is None:
        workspace.mkdir()
        return None
    return repository_path(repo, suite_dir)


def repository_path(repo: str, suite_dir: Path) -> Path:
    """A task's ``repo``: absolute, or relative to the suite's directory."""
    path = Path(os.path.expanduser(repo))
    return path if path.is_absolute() else suite_dir / path


async def prepare_workspace(
    task: Task, workspace: Path, suite_dir: Path, seconds: float = SETUP_TIMEOUT
) -> Path:
    """Create ``workspace`` (which must not exist) and prepare it for ``task``; each setup
    command and git step may take ``seconds``."""
    repo = await asyncio.to_thread(_make_room, workspace, task.repo, suite_dir)
    if repo is not None:
        await _run(
            ["git", "clone", "--quiet", "--no-hardlinks", str(repo), str(workspace)],
            workspace.parent, f"task {task.id!r}: git clone {task.repo}", seconds,
        )  # fmt: skip
        if task.commit is not None:
            await _run(
                ["git", "-c", "advice.detachedHead=false", "checkout", "--quiet", task.commit],
                workspace, f"task {task.id!r}: git checkout {task.commit}", seconds,
            )  # fmt: skip
    await asyncio.to_thread(_write_files, workspace, task.files)
    for number, command in enumerate(task.setup, 1):
        await _run(command, workspace, f"task {task.id!r}: setup command {number}", seconds)
    return workspace
