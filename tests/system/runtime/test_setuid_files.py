"""An agent's command makes a setuid copy of a shell in the workspace: no sandbox leaves the
host a root-owned setuid file, neither while it runs (the sandbox's files are an unprivileged
uid's, the local jail's root included) nor after it closes (setuid/setgid bits are cleared).

Run as root (this suite's own user), the local jail runs as ``sandbox_uid``; as another user,
as that user. Either way the file's owner is not root.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from app.events import Run, RunOutput
from app.runtime.special_bits import clear_special_bits
from tests.support.sandboxes import started_runtime

ATTACK = (
    "cp /bin/sh ./x && chmod 4755 ./x && mkdir -p d && cp /bin/sh d/y && chmod 6755 d/y "
    "&& chmod 2775 d && echo MADE"
)
SPECIAL = stat.S_ISUID | stat.S_ISGID


def _special_entries(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``root`` (itself included) with a setuid/setgid bit: (uid, mode)."""
    found: dict[str, tuple[int, int]] = {}
    for path in [root, *root.rglob("*")]:
        info = os.lstat(path)
        if info.st_mode & SPECIAL:
            found[str(path.relative_to(root))] = (info.st_uid, stat.S_IMODE(info.st_mode))
    return found


@pytest.mark.parametrize("kind", ["local", "docker"])
async def test_a_setuid_copy_of_a_shell_is_never_roots_and_is_cleared_on_close(
    kind: str, request: pytest.FixtureRequest, workspace: Path, tmp_path: Path
) -> None:
    if kind == "docker":
        request.getfixturevalue("docker_ready")
    async with started_runtime(kind, workspace, tmp_path) as sandbox:
        made = await sandbox.execute(Run(command=ATTACK, timeout=30))
        assert isinstance(made, RunOutput) and "MADE" in made.output, made
        running = _special_entries(workspace)
        assert {"x", "d", "d/y"} <= set(running), running  # the bits were set meanwhile
        owners = {name: uid for name, (uid, _) in running.items()}
        assert all(uid != 0 for uid in owners.values()), f"root-owned setuid files: {owners}"
    assert _special_entries(workspace) == {}, "setuid/setgid bits outlived the sandbox"
    assert stat.S_IMODE(os.lstat(workspace / "x").st_mode) == 0o755


def test_clearing_never_follows_a_link(tmp_path: Path) -> None:
    """A link in the workspace to a setuid file elsewhere: the file elsewhere keeps its bit."""
    outside = tmp_path / "outside"
    outside.write_bytes(b"#!/bin/sh\n")
    os.chmod(outside, 0o4755)
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    os.symlink(outside, workspace / "link")
    os.symlink(tmp_path, workspace / "sub" / "up")
    (workspace / "mine").write_bytes(b"x")
    os.chmod(workspace / "mine", 0o6755)
    assert clear_special_bits(workspace) == 1
    assert stat.S_IMODE(os.lstat(outside).st_mode) == 0o4755
    assert stat.S_IMODE(os.lstat(workspace / "mine").st_mode) == 0o755


@pytest.mark.skipif(os.geteuid() != 0, reason="who the jail runs as is root's choice")
async def test_as_root_the_local_jail_is_the_workspace_owner_or_the_sandbox_uid(
    tmp_path: Path,
) -> None:
    """Docker's rule, for the local jail: a normal user's workspace gets that user; a new (or
    root's) one gets ``sandbox_uid``. Either way what the agent writes is that uid's."""
    owned = tmp_path / "owned"
    owned.mkdir()
    os.chown(owned, 23456, 23456)
    fresh = tmp_path / "fresh"
    for workspace, uid in ((owned, 23456), (fresh, 10001)):
        async with started_runtime("local", workspace, tmp_path) as sandbox:
            result = await sandbox.execute(Run(command="id -u; touch made", timeout=30))
            assert isinstance(result, RunOutput) and result.output.split() == [str(uid)], result
        assert os.lstat(workspace / "made").st_uid == uid


@pytest.mark.skipif(os.geteuid() != 0, reason="only root could change the host file's mode")
def test_clearing_leaves_a_host_file_hard_linked_into_the_workspace_alone(
    tmp_path: Path,
) -> None:
    """A sandbox hard-links a host's setuid-root program into its workspace (it may, where
    fs.protected_hardlinks is off and they share a file system, like /usr/bin/passwd): the
    clearing, run as root when the sandbox closes, must not strip the host program's bit. The
    sandbox's own setuid file stays cleared, hard-linked twice or not."""
    host_program = tmp_path / "usr-bin-passwd"
    host_program.write_bytes(b"#!/bin/sh\n")
    os.chmod(host_program, 0o4755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.chown(workspace, 10001, 10001)  # the sandbox's workspace, as root hands it over
    os.link(host_program, workspace / "passwd")
    for name in ("mine", "mine-again"):
        if name == "mine":
            (workspace / name).write_bytes(b"x")
            os.chown(workspace / name, 10001, 10001)
            os.chmod(workspace / name, 0o6755)
        else:
            os.link(workspace / "mine", workspace / name)
    assert clear_special_bits(workspace) == 1
    assert stat.S_IMODE(os.lstat(host_program).st_mode) == 0o4755
    assert stat.S_IMODE(os.lstat(workspace / "mine").st_mode) == 0o755
