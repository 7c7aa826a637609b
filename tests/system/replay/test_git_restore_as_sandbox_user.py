"""A git start restored by Chronicle running as root: git runs as the sandbox's uid.

The source repository is the source session's sandbox's to write, ``.git`` included. The
attacks: its objects' ``info/alternates`` naming a repository only root may read, and a
recorded commit of that repository (the fork checked out the root-only files, for the fork's
owner to read); its config naming an fsmonitor and a hooks directory with a post-checkout
hook (the script must not run as root).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from app.events import WorkspaceSnapshot
from app.runtime.workspace_restore import apply_change, restore
from app.runtime.workspace_state import WorkspaceStateError

SANDBOX_UID = 10001

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the attack needs Chronicle as root")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def _repository(path: Path, name: str, text: str) -> str:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    (path / name).write_text(text)
    _git(path, "add", name)
    _git(path, "commit", "-q", "-m", name)
    return _git(path, "rev-parse", "HEAD")


def _hand_to_sandbox(path: Path) -> None:
    """The source workspace as a local sandbox run by root leaves it: the sandbox uid's."""
    subprocess.run(["chown", "-R", f"{SANDBOX_UID}:{SANDBOX_UID}", str(path)], check=True)


def _start(commit: str) -> WorkspaceSnapshot:
    return WorkspaceSnapshot(vcs="git", commit=commit, branch="main", diff="", max_bytes=1 << 20)


def _owners(root: Path) -> set[int]:
    owners = {os.lstat(root).st_uid}
    for directory, dirs, files in os.walk(root):
        owners |= {os.lstat(Path(directory) / n).st_uid for n in (*dirs, *files)}
    return owners


@pytest.fixture
def borrowing_source(tmp_path: Path) -> tuple[Path, str]:
    """A source repository whose alternates name a root-only one; that one's commit."""
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    secret_commit = _repository(private / "repo", "secret.txt", "root's secret\n")
    source = tmp_path / "shared" / "source"
    _repository(source, "readme.txt", "hello\n")
    alternates = source / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(f"{private / 'repo' / '.git' / 'objects'}\n")
    _hand_to_sandbox(source)
    (tmp_path / "shared").chmod(0o755)
    tmp_path.chmod(0o711)
    return source, secret_commit


async def test_alternates_naming_a_root_only_repository_check_out_nothing_of_it(
    tmp_path: Path, borrowing_source: tuple[Path, str]
) -> None:
    source, secret_commit = borrowing_source
    target = tmp_path / "fork"

    with pytest.raises(WorkspaceStateError) as refused:
        await restore(_start(secret_commit), target, repository=source, sandbox_uid=SANDBOX_UID)

    assert not await asyncio.to_thread((target / "secret.txt").exists)
    assert "not a tree" in str(refused.value)  # the commit is not among what it may read


@pytest.fixture
def hooked_source(tmp_path: Path) -> tuple[Path, str, Path]:
    """A source repository whose config names an fsmonitor and a hooks directory (with a
    post-checkout hook) that note who ran them in ``marker``; its commit and the marker."""
    source = tmp_path / "source"
    commit = _repository(source, "readme.txt", "hello\n")
    marker = tmp_path / "ran"
    script = tmp_path / "hooks" / "post-checkout"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\nid -u >> {marker}\nexit 0\n")
    script.chmod(0o755)
    (script.parent / "fsmonitor-watchman").symlink_to(script)
    _git(source, "config", "core.hooksPath", str(script.parent))
    _git(source, "config", "core.fsmonitor", str(script))
    (source / ".git" / "hooks" / "post-checkout").symlink_to(script)
    _hand_to_sandbox(source)
    marker.touch()
    marker.chmod(0o666)
    return source, commit, marker


async def test_the_source_repositorys_fsmonitor_and_hooks_do_not_run_as_root(
    tmp_path: Path, hooked_source: tuple[Path, str, Path]
) -> None:
    source, commit, marker = hooked_source
    target = tmp_path / "private-dir" / "fork"  # below tmp_path: mode 0700, root's

    await restore(_start(commit), target, repository=source, sandbox_uid=SANDBOX_UID)
    await apply_change(target, "")

    ran_as = await asyncio.to_thread(marker.read_text)
    assert "0" not in ran_as.split(), "a script of the source repository ran as root"
    assert await asyncio.to_thread((target / "readme.txt").read_text) == "hello\n"
    assert await asyncio.to_thread(_owners, target) == {SANDBOX_UID}
