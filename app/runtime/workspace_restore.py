"""Putting a recorded workspace start back: into a fresh directory (a fork), or as the
baseline a resumed run's ``workspace.diff`` is computed against.

A snapshot comes from the log, so its paths are checked: one that is absolute, climbs out
with ``..`` or passes through a link is refused rather than written outside the target.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from app.events.workspace import WorkspaceFile, WorkspaceSnapshot
from app.runtime.workspace_state import (
    EMPTY_TREE,
    Baseline,
    WorkspaceStateError,
    git,
    is_git_repository,
    new_scratch,
)


def _safe_target(target: Path, path: str) -> Path:
    parts = PurePosixPath(path).parts
    if not parts or PurePosixPath(path).is_absolute() or ".." in parts or ".git" in parts:
        raise WorkspaceStateError(f"the snapshot names an unsafe path {path!r}; not restored")
    here = target
    for part in parts[:-1]:
        here = here / part
        if here.is_symlink():
            raise WorkspaceStateError(f"{path!r} passes through a link; not restored")
    return target.joinpath(*parts)


def _write_files(files: list[WorkspaceFile], target: Path) -> None:
    for entry in files:
        full = _safe_target(target, entry.path)
        full.parent.mkdir(parents=True, exist_ok=True)
        if entry.type == "symlink":
            os.symlink(entry.content, full)
            continue
        data = (
            base64.b64decode(entry.content)
            if entry.encoding == "base64"
            else entry.content.encode("utf-8")
        )
        full.write_bytes(data)
        full.chmod(0o755 if entry.type == "executable" else 0o644)


async def restore(
    snapshot: WorkspaceSnapshot, target: Path, *, repository: Path | None, timeout: float = 60.0
) -> None:
    """Rebuild the recorded start in ``target`` (an empty or missing directory). A git start
    is cloned from ``repository`` (the recorded workspace, or any clone holding the commit),
    checked out at the commit and branch, and the uncommitted diff applied."""
    if snapshot.vcs == "unavailable":
        raise WorkspaceStateError(
            "the session recorded no workspace state (its host could not see the workspace); "
            "pass a workspace directory to start from instead"
        )
    await asyncio.to_thread(target.mkdir, parents=True, exist_ok=True)
    if any(await asyncio.to_thread(lambda: list(target.iterdir()))):
        raise WorkspaceStateError(f"{target} is not empty; restore into a new directory")
    if snapshot.vcs == "none":
        await asyncio.to_thread(_write_files, snapshot.files, target)
        return
    run = {"git_dir": target / ".git", "work_tree": target, "timeout": timeout}
    if snapshot.commit is None:
        await git(["init", "-q"], **run)  # type: ignore[arg-type]
    else:
        if repository is None or not is_git_repository(repository):
            raise WorkspaceStateError(
                f"the recorded start is commit {snapshot.commit} of a git repository, and "
                f"{repository} is not one; pass the repository that holds it"
            )
        # A clone checks who owns the source (a Docker sandbox's workspace belongs to the
        # sandbox's uid), and only a global config may vouch for it: one of ours, for this.
        with tempfile.TemporaryDirectory(prefix="chronicle-git-") as scratch:
            trusting = Path(scratch) / "gitconfig"
            await asyncio.to_thread(trusting.write_text, "[safe]\n\tdirectory = *\n")
            await git(
                ["clone", "-q", "--no-checkout", "--no-hardlinks", str(repository), str(target)],
                git_dir=target / ".git", work_tree=None, timeout=timeout,
                global_config=trusting,
            )  # fmt: skip
        if snapshot.branch:
            await git(["checkout", "-q", "-B", snapshot.branch, snapshot.commit], **run)  # type: ignore[arg-type]
        else:
            await git(["checkout", "-q", "--detach", snapshot.commit], **run)  # type: ignore[arg-type]
    if snapshot.diff:
        patch = snapshot.diff.encode("utf-8", errors="surrogateescape")
        await git(["apply", "--binary", "--whitespace=nowarn", "-"], stdin=patch, **run)  # type: ignore[arg-type]


async def baseline_from_snapshot(
    snapshot: WorkspaceSnapshot, workspace: Path, *, timeout: float = 60.0
) -> Baseline | None:
    """The baseline of a recorded start, for a run that resumes a session (the process that
    recorded it is gone): the same tree, rebuilt from the log (and, for git, the workspace
    repository's objects)."""
    if snapshot.vcs == "unavailable":
        return None
    root = Path(os.path.realpath(workspace))  # noqa: ASYNC240 - resolving, no file I/O
    is_git = snapshot.vcs == "git"
    scratch = await new_scratch(root, timeout)
    baseline = Baseline(root, scratch, EMPTY_TREE, snapshot.max_bytes, is_git, timeout)
    index = scratch / "index"
    try:
        if is_git:
            run = {"git_dir": baseline.git_dir, "work_tree": root, "timeout": timeout}
            await git(["read-tree", snapshot.commit or EMPTY_TREE], index=index, **run)  # type: ignore[arg-type]
            if snapshot.diff:
                patch = snapshot.diff.encode("utf-8", errors="surrogateescape")
                await git(["apply", "--cached", "--binary", "-"], index=index, stdin=patch, **run)  # type: ignore[arg-type]
        else:
            start = scratch / "start"
            await asyncio.to_thread(start.mkdir)
            await asyncio.to_thread(_write_files, snapshot.files, start)
            run = {"git_dir": baseline.git_dir, "work_tree": start, "timeout": timeout}
            await git(["add", "-A", "-f", "."], index=index, **run)  # type: ignore[arg-type]
        baseline.tree = (await git(["write-tree"], index=index, **run)).decode().strip()  # type: ignore[arg-type]
        if not is_git:
            await asyncio.to_thread(shutil.rmtree, scratch / "start")
    except BaseException:
        baseline.close()
        raise
    return baseline
