"""Running a restore's git as the sandbox's user, when Chronicle runs as root.

A git start is cloned from a repository the source session's sandbox could write (its
``.git`` included), then checked out and patched in the fork's workspace. Run as root, any
way that repository finds to make git run or read something (alternates naming a root-only
repository, a hook, a command in a config) would do it as root. So git runs as the uid the
sandbox on the restored workspace runs as (no supplementary groups), with an environment of
its own: no variable of Chronicle's, ``HOME`` a private directory, no system config and a
global config of ours. What it does is then no more than that sandbox could do itself.

That user may not be able to reach the paths (a data directory of mode 0700): then, as the
local jail does (``private_mounts``), the child binds them, while still root, in a mount
namespace of its own onto directories it can reach, and git is given those paths.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from app.runtime.local.private_mounts import bind_privately, mount_points
from app.runtime.sandbox_user import SandboxUser

#: What our global config says: the repositories a restore opens belong to another uid (a
#: Docker sandbox's, the project owner's) and are trusted as far as that user goes.
GLOBAL_CONFIG = "[safe]\n\tdirectory = *\n"


@dataclass
class GitUser:
    """Who git runs as, and where it finds the paths it is given (``path``)."""

    user: SandboxUser
    home: Path
    binds: list[tuple[bytes, bytes]] = field(default_factory=list)
    places: dict[Path, Path] = field(default_factory=dict)

    def path(self, real: Path) -> Path:
        """``real`` as git sees it (below a private bind when the user cannot reach it)."""
        for source, point in self.places.items():
            if real == source or real.is_relative_to(source):
                return point / real.relative_to(source)
        return real

    def environment(self) -> dict[str, str]:
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(self.home / "gitconfig"),
        }

    def preexec(self) -> Callable[[], None]:
        """The child's setup: the binds (as root), then become the user."""
        binds, user = list(self.binds), self.user

        def setup() -> None:
            if binds:
                bind_privately(binds)
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)

        return setup


def reachable(path: Path, user: SandboxUser) -> bool:
    """Whether ``user`` (no supplementary groups) may enter every directory above ``path``."""
    for directory in [*reversed(path.parents)]:
        try:
            info = os.stat(directory)
        except OSError:
            return False
        if info.st_uid == user.uid:
            bit = stat.S_IXUSR
        elif info.st_gid == user.gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return False
    return True


@contextlib.contextmanager
def git_user(user: SandboxUser, paths: list[Path]) -> Iterator[GitUser]:
    """A private home for git as ``user``, and binds for those of ``paths`` (directories) it
    cannot reach; all removed afterwards (the binds live in each child's namespace only)."""
    home = Path(tempfile.mkdtemp(prefix="chronicle-git-home-"))
    mounts: Path | None = None
    try:
        (home / "gitconfig").write_text(GLOBAL_CONFIG, encoding="utf-8")
        os.chown(home / "gitconfig", user.uid, user.gid)
        os.chmod(home, 0o700)
        os.chown(home, user.uid, user.gid)
        hidden = [p for p in paths if not reachable(p, user)]
        places: dict[Path, Path] = {}
        if hidden:
            mounts, places = mount_points(hidden)
        binds = [(os.fsencode(a), os.fsencode(b)) for a, b in places.items()]
        yield GitUser(user, home, binds, places)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if mounts is not None:
            for point in mounts.iterdir():
                with contextlib.suppress(OSError):
                    point.rmdir()
            with contextlib.suppress(OSError):
                mounts.rmdir()
