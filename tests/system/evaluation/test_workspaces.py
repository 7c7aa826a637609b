"""A task's workspace: a repository at its commit, the files, the setup commands; a file the
suite names is never written outside the workspace through a link the repository holds
(without the checks in ``_write_files`` both attacks below write outside), and a failing or
hanging setup says which task and command."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from app.evaluation.suite import Task
from app.evaluation.workspaces import WorkspaceError, prepare_workspace


def repository_with_links(root: Path, outside: Path) -> None:
    root.mkdir()
    os.symlink(outside, root / "dir-link")
    os.symlink(outside / "target.txt", root / "file-link")
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "links"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=root, check=True, capture_output=True,
        )  # fmt: skip


@pytest.mark.parametrize("path", ["dir-link/pwned.txt", "file-link"])
async def test_files_are_not_written_through_a_repositorys_links(tmp_path: Path, path: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("mine")
    repository_with_links(tmp_path / "repo", outside)
    task = Task(id="t", prompt="p", repo="repo", files={path: "pwned"})
    with pytest.raises(WorkspaceError, match=f"file '{path}' would be written outside"):
        await prepare_workspace(task, tmp_path / "ws", tmp_path)
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]
    assert (outside / "target.txt").read_text() == "mine"


async def test_a_failing_or_slow_setup_names_the_task_and_command(tmp_path: Path) -> None:
    task = Task(id="t", prompt="p", setup=["true", "echo broken >&2; exit 3"])
    with pytest.raises(WorkspaceError, match="task 't': setup command 2 exited 3: broken"):
        await prepare_workspace(task, tmp_path / "ws", tmp_path)
    slow = Task(id="s", prompt="p", setup=["sleep 30"])
    with pytest.raises(WorkspaceError, match="task 's': setup command 1 did not finish within"):
        await prepare_workspace(slow, tmp_path / "ws2", tmp_path, seconds=0.5)
    with pytest.raises(WorkspaceError, match="exists already"):
        await prepare_workspace(slow, tmp_path / "ws2", tmp_path)


async def test_a_missing_repository_or_commit_is_said(tmp_path: Path) -> None:
    task = Task(id="r", prompt="p", repo="no-such-repo")
    with pytest.raises(WorkspaceError, match="task 'r': git clone no-such-repo exited 128"):
        await prepare_workspace(task, tmp_path / "ws", tmp_path)
