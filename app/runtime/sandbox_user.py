"""Who a sandbox runs as on the host, Docker or local jail alike: the workspace's owner,
never root. A fork's restore writes as the same user (``app.runtime.workspace_restore``).

The rule, chosen so files keep the owner they would have had without a sandbox:

- Chronicle runs as a normal user: the sandbox runs as that user (uid and gid), and the
  workspace must be theirs (a missing one is created).
- Chronicle runs as root, the workspace belongs to a normal user: the sandbox runs as that
  user, so what the agent writes belongs to the project's owner.
- Chronicle runs as root, the workspace is missing or belongs to root: the sandbox runs as
  the dedicated unprivileged ``sandbox_uid`` (gid the same number), and the workspace is
  created for it or *handed over*: every root-owned entry in it is chowned to that uid
  (links are not followed, hard-linked files are skipped), once, with a warning in the log.
  Later starts find the workspace owned by ``sandbox_uid`` and need no change.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from app.runtime.errors import SandboxStartError

log = logging.getLogger(__name__)

ROOT = 0


@dataclass(frozen=True)
class SandboxUser:
    uid: int
    gid: int

    @property
    def spec(self) -> str:
        """As Docker's ``user`` option takes it."""
        return f"{self.uid}:{self.gid}"


def prepare_workspace(workspace: Path, sandbox_uid: int) -> SandboxUser:
    """Create or hand over ``workspace`` as the rule above says; who the sandbox runs as."""
    if os.geteuid() != ROOT:
        return _as_this_user(workspace)
    dedicated = SandboxUser(sandbox_uid, sandbox_uid)
    if not workspace.exists():
        workspace.mkdir(parents=True, exist_ok=True)
        os.chown(workspace, dedicated.uid, dedicated.gid)
        return dedicated
    owner = os.stat(workspace)
    if owner.st_uid != ROOT:
        return SandboxUser(owner.st_uid, owner.st_gid if owner.st_gid != ROOT else owner.st_uid)
    hand_over(workspace, dedicated)
    return dedicated


def _as_this_user(workspace: Path) -> SandboxUser:
    me = SandboxUser(os.geteuid(), os.getegid())
    workspace.mkdir(parents=True, exist_ok=True)
    owner = os.stat(workspace).st_uid
    if owner != me.uid:
        raise SandboxStartError(
            f"the workspace {workspace} belongs to uid {owner}, but Chronicle runs as uid "
            f"{me.uid}; a sandbox runs as the user who runs Chronicle and needs a "
            "workspace of theirs. Use a directory you own (or chown it to yourself)."
        )
    return me


def hand_over(workspace: Path, user: SandboxUser, *, quiet: bool = False) -> int:
    """chown every root-owned entry under ``workspace`` to ``user``; the number changed.
    ``quiet``: no warning (a restore handing over what it just wrote for that user).

    Walks with directory file descriptors and never follows a symlink, so a link in the tree
    cannot redirect a chown outside it; a regular file with more than one hard link may be a
    link to a file elsewhere and is left alone. chown clears setuid/setgid bits.
    """
    if len(workspace.parts) <= 2:
        raise SandboxStartError(
            f"refusing to hand {workspace} to uid {user.uid}: as root, Chronicle runs the "
            "sandbox as an unprivileged user and would chown the workspace's root-owned files "
            "to it, which is no thing to do to a system directory. Use a project directory."
        )
    parent = os.open(workspace.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        changed = _chown_if_root(parent, workspace.name, user)
    finally:
        os.close(parent)
    for _, dirs, files, dir_fd in os.fwalk(workspace, follow_symlinks=False):
        for name in (*dirs, *files):
            changed += _chown_if_root(dir_fd, name, user)
    if quiet:
        return changed
    # an empty directory (a new session's workspace, made by the API as root) is no news
    log.log(
        logging.WARNING if changed > 1 else logging.INFO,
        "the workspace %s belonged to root; handed %d entries to uid %d (sandbox_uid) so the "
        "sandbox never runs as root",
        workspace,
        changed,
        user.uid,
    )
    return changed


def _chown_if_root(dir_fd: int, name: str, user: SandboxUser) -> int:
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if info.st_uid != ROOT:
        return 0
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        log.warning("not handing over %s: it has other hard links", name)
        return 0
    os.chown(name, user.uid, user.gid, dir_fd=dir_fd, follow_symlinks=False)
    return 1
