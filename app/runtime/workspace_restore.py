"""Putting a recorded workspace start back: into a fresh directory (a fork), or as the
baseline a resumed run's ``workspace.diff`` is computed against.

A snapshot is data from outside (an imported export, any login of the application), and
restoring it writes on the host, so:

- the manifest is checked first (``unsafe_entry``: no absolute, ``..`` or ``.git`` path, no
  entry twice, none beneath a link or a file), and then written by ``restore_files``, which
  opens everything beneath the target with no-follow semantics, never through a link;
- when Chronicle runs as root, the files are written by a child process running as the uid
  the sandbox would run as (``sandbox_user``), so even a mistake here writes nothing that
  sandbox could not; the target is made theirs first;
- a git start is cloned, checked out and patched by git itself, which refuses paths with
  ``..`` or ``.git`` and any path beyond a symbolic link; as root, git runs as the sandbox's
  uid (``git_as_user``), so what the source repository makes it do or read (it is the
  source sandbox's to write) is no more than that sandbox could, and what it writes is
  that uid's; it runs no hook and no fsmonitor, and speaks no protocol but a local clone;
- modes are 0644 or 0755, and setuid/setgid bits are cleared afterwards whatever made them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from app.events.workspace import WorkspaceFile, WorkspaceSnapshot, unsafe_entry, unsafe_start
from app.runtime import restore_files
from app.runtime.errors import SandboxStartError
from app.runtime.git_as_user import GLOBAL_CONFIG, GitUser, git_user
from app.runtime.local.jail import system_python
from app.runtime.sandbox_user import SandboxUser, prepare_workspace
from app.runtime.special_bits import clear_special_bits
from app.runtime.workspace_state import (
    EMPTY_TREE,
    Baseline,
    WorkspaceStateError,
    git,
    is_git_repository,
    new_scratch,
)

#: The sandbox_uid setting's default, for callers without settings.
DEFAULT_SANDBOX_UID = 10001


def check_manifest(files: list[WorkspaceFile]) -> None:
    """WorkspaceStateError when a manifest may not be restored (said before any write)."""
    problem = unsafe_entry(files)
    if problem is not None:
        raise WorkspaceStateError(
            f"the snapshot cannot be restored safely: {problem}; nothing was written"
        )


def check_start(snapshot: WorkspaceSnapshot) -> None:
    """WorkspaceStateError when a recorded start may not be restored or resumed from: its
    files, and a commit, tree or branch git would take for something else (``unsafe_start``)."""
    problem = unsafe_start(snapshot)
    if problem is not None:
        raise WorkspaceStateError(
            f"the snapshot cannot be restored safely: {problem}; nothing was written"
        )


def _entries(files: list[WorkspaceFile]) -> list[dict[str, str]]:
    return [
        {"path": f.path, "type": f.type, "encoding": f.encoding, "content": f.content}
        for f in files
    ]


def _open_directory(target: Path) -> int:
    return os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


async def write_manifest(
    files: list[WorkspaceFile], target: Path, user: SandboxUser | None, *, timeout: float
) -> None:
    """Write ``files`` beneath the directory ``target``: here, or as ``user`` in a child."""
    check_manifest(files)
    entries = _entries(files)
    try:
        fd = await asyncio.to_thread(_open_directory, target)
    except OSError as exc:
        raise WorkspaceStateError(f"cannot open {target}: {exc.strerror}") from None
    try:
        if user is None:
            try:
                await asyncio.to_thread(restore_files.write_entries, fd, entries)
            except restore_files.RestoreRefused as exc:
                raise WorkspaceStateError(f"not restored: {exc}") from None
            except (OSError, ValueError) as exc:
                raise WorkspaceStateError(f"restoring the files failed: {exc}") from None
        else:
            await _write_as(user, fd, entries, timeout)
    finally:
        os.close(fd)


async def _write_as(
    user: SandboxUser, fd: int, entries: list[dict[str, str]], timeout: float
) -> None:
    """``restore_files`` run as ``user`` (no supplementary groups), on the open ``fd``."""
    python, _ = system_python()
    source = await asyncio.to_thread(Path(restore_files.__file__).read_text, encoding="utf-8")
    try:
        process = await asyncio.create_subprocess_exec(
            python, "-I", "-B", "-c", source, str(fd),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, pass_fds=(fd,), cwd="/",
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
            user=user.uid, group=user.gid, extra_groups=[], umask=0o022,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise WorkspaceStateError(
            f"could not run {python} as uid {user.uid} to restore the files: {exc}; the "
            "sandbox's uid needs a Python it can run (the system's python3)"
        ) from None
    try:
        async with asyncio.timeout(timeout):
            _, err = await process.communicate(json.dumps(entries).encode())
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise WorkspaceStateError(f"restoring the files took longer than {timeout:g}s") from None
    if process.returncode != 0:
        detail = err.decode(errors="replace").strip() or f"exit status {process.returncode}"
        raise WorkspaceStateError(f"not restored (as uid {user.uid}): {detail}")


def _prepare_target(target: Path, sandbox_uid: int) -> SandboxUser | None:
    """Make ``target`` an empty directory of the sandbox's user; that user, or None when it is
    this process's own (no child needed)."""
    if target.is_symlink():
        raise WorkspaceStateError(f"{target} is a symbolic link; restore into a new directory")
    if target.exists() and any(target.iterdir()):
        raise WorkspaceStateError(f"{target} is not empty; restore into a new directory")
    try:
        user = prepare_workspace(target, sandbox_uid)
    except SandboxStartError as exc:
        raise WorkspaceStateError(str(exc)) from None
    return None if user.uid == os.geteuid() else user


async def restore(
    snapshot: WorkspaceSnapshot,
    target: Path,
    *,
    repository: Path | None,
    timeout: float = 60.0,
    sandbox_uid: int = DEFAULT_SANDBOX_UID,
) -> None:
    """Rebuild the recorded start in ``target`` (an empty or missing directory), owned by the
    user a sandbox on it runs as (``sandbox_uid`` when Chronicle is root and the target is
    root's or new). A git start is cloned from ``repository`` (the recorded workspace, or any
    clone holding the commit), checked out at the commit and branch, the diff applied."""
    if snapshot.vcs == "unavailable":
        raise WorkspaceStateError(
            "the session recorded no workspace state (its host could not see the workspace); "
            "pass a workspace directory to start from instead"
        )
    check_start(snapshot)
    user = await asyncio.to_thread(_prepare_target, target, sandbox_uid)
    if snapshot.vcs == "none":
        await write_manifest(snapshot.files, target, user, timeout=timeout)
    else:
        await _restore_git(snapshot, target, repository, user, timeout)
    await asyncio.to_thread(clear_special_bits, target)


async def apply_change(target: Path, patch: str, *, timeout: float = 60.0) -> None:
    """Apply a recorded ``workspace.diff`` to a start ``restore`` rebuilt in ``target``: with
    git (which refuses ``..``, ``.git`` and paths beyond a link), run as the target's owner
    (the sandbox's user) when Chronicle is root; setuid/setgid bits cleared afterwards."""
    user = await asyncio.to_thread(_owner, target)
    with _git_as(user, [target]) as as_user:
        run = _run_in(target, as_user, timeout)
        if not await asyncio.to_thread((target / ".git").exists):
            await git(["init", "-q"], **run)  # type: ignore[arg-type]
        if patch:
            data = patch.encode("utf-8", errors="surrogateescape")
            await git(["apply", "--binary", "--whitespace=nowarn", "-"], stdin=data, **run)  # type: ignore[arg-type]
    await asyncio.to_thread(clear_special_bits, target)


def _owner(target: Path) -> SandboxUser | None:
    """Who git runs as in ``target``: its owner when Chronicle is root and that is not root."""
    owner = os.stat(target, follow_symlinks=False)
    if os.geteuid() != 0 or owner.st_uid == 0:
        return None
    return SandboxUser(owner.st_uid, owner.st_gid or owner.st_uid)


@contextlib.contextmanager
def _git_as(user: SandboxUser | None, paths: list[Path]) -> Iterator[GitUser | None]:
    if user is None:
        yield None
        return
    try:
        context = git_user(user, paths)
        as_user = context.__enter__()
    except OSError as exc:
        raise WorkspaceStateError(
            f"could not prepare git to run as uid {user.uid}: {exc}"
        ) from None
    try:
        yield as_user
    finally:
        context.__exit__(None, None, None)


def _run_in(target: Path, as_user: GitUser | None, timeout: float) -> dict[str, object]:
    seen = as_user.path(target) if as_user is not None else target
    return {"git_dir": seen / ".git", "work_tree": seen, "timeout": timeout, "as_user": as_user}


async def _restore_git(
    snapshot: WorkspaceSnapshot,
    target: Path,
    repository: Path | None,
    user: SandboxUser | None,
    timeout: float,
) -> None:
    if snapshot.commit is not None and (repository is None or not is_git_repository(repository)):
        raise WorkspaceStateError(
            f"the recorded start is commit {snapshot.commit} of a git repository, and "
            f"{repository} is not one; pass the repository that holds it"
        )
    places = [target] if repository is None else [target, repository]
    with _git_as(user, places) as as_user:
        await _git_start(snapshot, target, repository, as_user, timeout)


async def _git_start(
    snapshot: WorkspaceSnapshot,
    target: Path,
    repository: Path | None,
    as_user: GitUser | None,
    timeout: float,
) -> None:
    run = _run_in(target, as_user, timeout)
    if snapshot.commit is None or repository is None:
        await git(["init", "-q"], **run)  # type: ignore[arg-type]
    else:
        # The source belongs to another uid (a Docker sandbox's, the project owner's), and
        # only a global config may vouch for it: one of ours. A local clone (it copies every
        # object: the recorded commit may be on no branch any more), over no other protocol.
        seen_target = Path(str(run["git_dir"])).parent
        seen_source = as_user.path(repository) if as_user is not None else repository
        clone = [
            *("-c", "protocol.allow=never", "-c", "protocol.file.allow=always"),
            *("clone", "-q", "--no-checkout", "--no-hardlinks", str(seen_source), str(seen_target)),
        ]
        with tempfile.TemporaryDirectory(prefix="chronicle-git-") as scratch:
            trusting = Path(scratch) / "gitconfig"
            await asyncio.to_thread(trusting.write_text, GLOBAL_CONFIG)
            await git(
                clone, git_dir=seen_target / ".git", work_tree=None, timeout=timeout,
                global_config=trusting, as_user=as_user,
            )  # fmt: skip
        if snapshot.branch:
            await git(["checkout", "-q", "-B", snapshot.branch, snapshot.commit], **run)  # type: ignore[arg-type]
        else:
            await git(["checkout", "-q", "--detach", snapshot.commit], **run)  # type: ignore[arg-type]
    if snapshot.diff:  # git apply refuses `..`, `.git` and any path beyond a link (tested)
        patch = snapshot.diff.encode("utf-8", errors="surrogateescape")
        await git(["apply", "--binary", "--whitespace=nowarn", "-"], stdin=patch, **run)  # type: ignore[arg-type]


async def baseline_from_snapshot(
    snapshot: WorkspaceSnapshot,
    workspace: Path,
    *,
    timeout: float = 60.0,
    sandbox_uid: int = DEFAULT_SANDBOX_UID,
) -> Baseline | None:
    """The baseline of a recorded start, for a run that resumes a session (the process that
    recorded it is gone): the same tree, rebuilt from the log (and, for git, the workspace
    repository's objects)."""
    if snapshot.vcs == "unavailable":
        return None
    check_start(snapshot)
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
            user = await asyncio.to_thread(_prepare_target, start, sandbox_uid)
            await write_manifest(snapshot.files, start, user, timeout=timeout)
            run = {"git_dir": baseline.git_dir, "work_tree": start, "timeout": timeout}
            await git(["add", "-A", "-f", "."], index=index, **run)  # type: ignore[arg-type]
        baseline.tree = (await git(["write-tree"], index=index, **run)).decode().strip()  # type: ignore[arg-type]
        if not is_git:
            await asyncio.to_thread(shutil.rmtree, scratch / "start")
    except BaseException:
        baseline.close()
        raise
    return baseline
