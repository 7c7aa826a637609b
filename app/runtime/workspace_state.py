"""Recording a workspace's state from the host: at a session's start, and the change at its end.

Everything goes through ``git`` (asyncio subprocesses with a timeout) in a throw-away git
directory of our own whose work tree is the workspace. Nothing is written into the
workspace or its repository, and the workspace repository's own configuration (hooks,
filters, fsmonitor, external diff: commands an untrusted repository could name) is never
read: the throw-away directory only borrows its objects (git alternates). git does not follow
symbolic links; it records them as links, so nothing outside the workspace is read.

A git workspace is recorded as its commit, branch and a binary patch of its uncommitted
changes (untracked files included, ignored ones not); a plain directory as a manifest of its
files (text, or base64 for other bytes). Both also give a git tree id of the recorded state,
against which the end's ``workspace.diff`` is computed. ``max_bytes`` is the budget of
contents one recording keeps: a file that does not fit what is left of it is named in
``skipped`` and left as it was at the start.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from app.errors import ChronicleError
from app.events.workspace import (
    LeftOut,
    SkippedFile,
    WorkspaceDiff,
    WorkspaceFile,
    WorkspaceSnapshot,
)
from app.runtime.git_as_user import GitUser
from app.runtime.workspace_noise import DEFAULT_LEAVE_OUT, split_noise

#: git's well-known id of the empty tree (it needs no object to exist).
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

#: Settings that keep git from reading or running anything of the user's or the machine's.
_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "LC_ALL": "C",
}
#: A Docker sandbox's workspace belongs to the sandbox's uid: git skips its ownership check for an
#: explicit GIT_DIR (how every command here runs), and safe.directory says so for any other.
#: No hook runs (a restore's repository is someone else's, even when its config is ours).
_GIT_FLAGS = (
    *("-c", "core.fsmonitor=false", "-c", "core.autocrlf=false", "-c", "core.quotepath=off"),
    *("-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null"),
)


class WorkspaceStateError(ChronicleError):
    """git failed or took too long while recording a workspace; the message says which."""


@dataclass
class Baseline:
    """The recorded start of one run: our git directory and the start's tree id. ``close``
    removes the directory."""

    root: Path
    scratch: Path
    tree: str
    max_bytes: int
    respect_ignores: bool
    timeout: float

    @property
    def git_dir(self) -> Path:
        return self.scratch / "git"

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


async def git(
    args: list[str],
    *,
    git_dir: Path,
    work_tree: Path | None,
    timeout: float,
    stdin: bytes | None = None,
    index: Path | None = None,
    global_config: Path | None = None,
    as_user: GitUser | None = None,
) -> bytes:
    """Run one git command against ``git_dir``; its stdout, or WorkspaceStateError.
    ``global_config``: a git config file of ours to read as the global one. ``as_user``: run
    as that user, with only its environment (``git_as_user``); paths as that user sees them."""
    if as_user is None:
        env = {**os.environ, **_GIT_ENV, "GIT_DIR": str(git_dir)}
        if global_config is not None:
            env["GIT_CONFIG_GLOBAL"] = str(global_config)
    else:
        env = {**_GIT_ENV, **as_user.environment(), "GIT_DIR": str(git_dir)}
    env.pop("GIT_WORK_TREE", None)
    env.pop("GIT_INDEX_FILE", None)
    if work_tree is not None:
        env["GIT_WORK_TREE"] = str(work_tree)
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    try:
        # as another user, the paths may exist only once its binds are made: git goes there
        # itself (-C) from "/"
        where = ["-C", str(work_tree)] if as_user is not None and work_tree is not None else []
        process = await asyncio.create_subprocess_exec(
            "git",
            *where,
            *_GIT_FLAGS,
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd="/" if as_user is not None else str(work_tree or git_dir.parent),
            env=env,
            preexec_fn=as_user.preexec() if as_user is not None else None,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        if as_user is None:
            raise WorkspaceStateError(f"could not run git: {exc}") from None
        hint = (
            "; it cannot reach the paths, and binding them for it needs a mount namespace "
            "(CAP_SYS_ADMIN): restore into a directory that uid can reach"
            if as_user.binds
            else ""
        )
        raise WorkspaceStateError(
            f"could not run git as uid {as_user.user.uid} (the sandbox's): {exc}{hint}"
        ) from None
    try:
        async with asyncio.timeout(timeout):
            out, err = await process.communicate(stdin)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise WorkspaceStateError(
            f"git {args[0]} took longer than {timeout:g}s on the workspace; raise "
            "workspace_snapshot_timeout or make the workspace smaller"
        ) from None
    if process.returncode != 0:
        raise WorkspaceStateError(
            f"git {' '.join(args[:2])} failed: {err.decode(errors='replace').strip()}"
        )
    return out


def is_git_repository(root: Path) -> bool:
    dot_git = root / ".git"
    return dot_git.is_dir() and not dot_git.is_symlink() and (dot_git / "objects").is_dir()


async def _workspace_head(root: Path, timeout: float) -> tuple[str | None, str | None]:
    """The workspace repository's commit (None before the first) and branch (None detached).
    Only refs are read: rev-parse and symbolic-ref run nothing the repository configures."""
    dot_git = root / ".git"
    try:
        commit = (
            await git(
                ["rev-parse", "--verify", "-q", "HEAD^{commit}"],
                git_dir=dot_git,
                work_tree=None,
                timeout=timeout,
            )
        ).decode()
    except WorkspaceStateError:
        commit = ""
    try:
        branch = (
            await git(
                ["symbolic-ref", "-q", "--short", "HEAD"],
                git_dir=dot_git,
                work_tree=None,
                timeout=timeout,
            )
        ).decode()
    except WorkspaceStateError:
        branch = ""
    return commit.strip() or None, branch.strip() or None


async def new_scratch(root: Path, timeout: float) -> Path:
    scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="chronicle-workspace-"))
    git_dir = scratch / "git"
    await git(
        ["init", "-q", "--bare", str(git_dir)], git_dir=git_dir, work_tree=None, timeout=timeout
    )
    if is_git_repository(root):
        alternates = git_dir / "objects" / "info" / "alternates"
        await asyncio.to_thread(alternates.write_text, str(root / ".git" / "objects") + "\n")
    return scratch


def _split_z(out: bytes) -> list[str]:
    return [os.fsdecode(part) for part in out.split(b"\0") if part]


class Staged(NamedTuple):
    """What ``_stage`` staged: the tree id, what did not fit or could not be read, the paths
    staged, and what was left out as noise."""

    tree: str
    skipped: list[SkippedFile]
    staged: list[str]
    left_out: list[LeftOut]


async def _stage(
    baseline: Baseline, base_tree: str, index: Path, leave_out: Sequence[str] = ()
) -> Staged:
    """Stage the workspace's differences from ``base_tree`` into ``index`` within the budget,
    leaving out the paths ``leave_out``'s patterns call noise (app/runtime/workspace_noise.py):
    they keep their state in ``base_tree``."""
    run = {"git_dir": baseline.git_dir, "work_tree": baseline.root, "timeout": baseline.timeout}
    await git(["read-tree", base_tree], index=index, **run)  # type: ignore[arg-type]
    with contextlib.suppress(WorkspaceStateError):  # exits 1 when something needs updating
        await git(["update-index", "-q", "--refresh"], index=index, **run)  # type: ignore[arg-type]
    changed = _split_z(await git(["diff-files", "--name-only", "-z"], index=index, **run))  # type: ignore[arg-type]
    untracked_args = ["ls-files", "-z", "--others"]
    if baseline.respect_ignores:
        untracked_args.append("--exclude-standard")
    untracked = _split_z(await git(untracked_args, index=index, **run))  # type: ignore[arg-type]
    budget = baseline.max_bytes
    staged: list[str] = []
    skipped: list[SkippedFile] = []
    candidates, left_out = split_noise(sorted({*changed, *untracked}), leave_out)
    for path in candidates:
        if path.endswith("/"):  # a nested repository: git would record a gitlink only
            skipped.append(SkippedFile(path=path, size=0, reason="a nested git repository"))
            continue
        try:
            info = os.lstat(baseline.root / path)
        except FileNotFoundError:
            staged.append(path)  # deleted: costs nothing
            continue
        size = (
            info.st_size if stat.S_ISREG(info.st_mode) else len(os.readlink(baseline.root / path))
        )
        if size > budget:
            reason = f"larger than what was left of the {baseline.max_bytes}-byte budget"
            skipped.append(SkippedFile(path=path, size=size, reason=reason))
            continue
        budget -= size
        staged.append(path)
    if staged:
        paths = b"".join(os.fsencode(p) + b"\0" for p in staged)
        await git(
            ["add", "-A", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"],
            index=index,
            stdin=paths,
            **run,  # type: ignore[arg-type]
        )
    tree = (await git(["write-tree"], index=index, **run)).decode().strip()  # type: ignore[arg-type]
    return Staged(tree, skipped, staged, left_out)


async def _patch(baseline: Baseline, old: str, new: str) -> tuple[str, list[str]]:
    """A binary-safe patch from tree ``old`` to tree ``new`` and the paths it touches."""
    run = {"git_dir": baseline.git_dir, "work_tree": None, "timeout": baseline.timeout}
    flags = ["--no-renames", "--no-ext-diff", "--no-textconv", "--full-index"]
    patch = await git(["diff-tree", "-r", "-p", "--binary", *flags, old, new], **run)  # type: ignore[arg-type]
    names = await git(["diff-tree", "-r", "--name-only", "-z", *flags, old, new], **run)  # type: ignore[arg-type]
    return patch.decode("utf-8", errors="surrogateescape"), _split_z(names)


def _manifest_entry(root: Path, path: str) -> WorkspaceFile | SkippedFile:
    """A manifest entry from what is on disk, never following a link."""
    full = root / path
    try:
        info = os.lstat(full)
        if stat.S_ISLNK(info.st_mode):
            target = os.readlink(full)
            data = os.fsencode(target)
            return WorkspaceFile(
                path=path, type="symlink", size=len(data), encoding="link", content=target,
                sha256=hashlib.sha256(data).hexdigest(),
            )  # fmt: skip
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return SkippedFile(path=path, size=0, reason=f"unreadable: {exc.strerror}")
    try:
        text, encoding = data.decode("utf-8"), "text"
    except UnicodeDecodeError:
        text, encoding = base64.b64encode(data).decode("ascii"), "base64"
    return WorkspaceFile(
        path=path,
        type="executable" if info.st_mode & stat.S_IXUSR else "file",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        encoding=encoding,  # type: ignore[arg-type]
        content=text,
    )


def empty_snapshot(max_bytes: int) -> WorkspaceSnapshot:
    """What ``capture`` records of an empty directory (no git, no file: the empty tree), said
    without starting git: a session's fresh workspace, made a moment before, is that."""
    return WorkspaceSnapshot(vcs="none", files=[], tree=EMPTY_TREE, max_bytes=max_bytes)


def is_empty_directory(path: Path) -> bool:
    """Whether ``path`` is a directory with nothing in it (blocking: call it in a thread)."""
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except (FileNotFoundError, NotADirectoryError):
        return False


async def capture(
    workspace: Path, *, max_bytes: int, timeout: float = 60.0
) -> tuple[WorkspaceSnapshot, Baseline | None]:
    """Record ``workspace`` as it is now: the snapshot event and the baseline the end's diff
    is computed against (None when the host cannot see the workspace)."""
    root = Path(os.path.realpath(workspace))  # noqa: ASYNC240 - resolving, no file I/O
    if not await asyncio.to_thread(root.is_dir):
        message = "the workspace is not a directory this host can read; nothing recorded"
        return WorkspaceSnapshot(vcs="unavailable", max_bytes=max_bytes, message=message), None
    is_git = is_git_repository(root)
    scratch = await new_scratch(root, timeout)
    baseline = Baseline(root, scratch, EMPTY_TREE, max_bytes, is_git, timeout)
    try:
        commit, branch = await _workspace_head(root, timeout) if is_git else (None, None)
        base = commit or EMPTY_TREE
        index = scratch / "index"
        tree, skipped, staged, _ = await _stage(baseline, base, index)
        baseline.tree = tree
        if is_git:
            diff, _ = await _patch(baseline, base, tree)
            snapshot = WorkspaceSnapshot(
                vcs="git", commit=commit, branch=branch, diff=diff, tree=tree,
                skipped=skipped, max_bytes=max_bytes,
            )  # fmt: skip
        else:
            entries = await asyncio.to_thread(lambda: [_manifest_entry(root, p) for p in staged])
            files = [e for e in entries if isinstance(e, WorkspaceFile)]
            skipped += [e for e in entries if isinstance(e, SkippedFile)]
            snapshot = WorkspaceSnapshot(
                vcs="none", files=files, tree=tree, skipped=skipped, max_bytes=max_bytes
            )
    except BaseException:
        baseline.close()
        raise
    return snapshot, baseline


async def final_diff(
    baseline: Baseline, *, reason: str, leave_out: Sequence[str] = DEFAULT_LEAVE_OUT
) -> WorkspaceDiff:
    """The workspace's change since ``baseline``, within the same budget, without the noise
    ``leave_out`` names (counted in the diff's ``left_out``)."""
    index = baseline.scratch / "final-index"
    with contextlib.suppress(FileNotFoundError):
        index.unlink()
    staged = await _stage(baseline, baseline.tree, index, leave_out)
    diff, changed = await _patch(baseline, baseline.tree, staged.tree)
    return WorkspaceDiff(
        reason=reason, diff=diff, changed=changed, tree=staged.tree, skipped=staged.skipped,
        left_out=staged.left_out,
    )  # fmt: skip
