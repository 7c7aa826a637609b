"""The bubblewrap jail of the local sandbox: what of the host it sees, and as whom.

A whitelist, not a blacklist: the jail's root is an empty tmpfs into which go, read-only, the
system directories (``/usr``, ``/bin``, ``/lib*``, ``/sbin``, ``/etc`` with its known secrets
masked), the action server's package, and the workspace read-write. No home, no ``/run``
(no Docker socket, no PostgreSQL socket), no ``/var``, no ``/sys``, no other workspace, a
private ``/tmp``. A new user namespace with every capability dropped, so even a sandbox
started by root cannot mount, and its own pid, ipc, uts, cgroup and (unless the network is
wanted) network namespaces.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

#: Read-only system directories (each only where the host has it; symlinks stay symlinks).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: Files under /etc that hold secrets: replaced by an empty file in the jail.
SECRET_FILES = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
    "/etc/ssh/ssh_host_*key",
)
#: Directories under /etc that hold secrets: replaced by an empty directory.
SECRET_DIRS = ("/etc/ssl/private",)
#: Where the action server's package is mounted inside the jail.
SERVER_ROOT = "/opt/chronicle"
#: Host variables a sandbox gets (besides those its caller passes on purpose).
ENV_ALLOWED = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class Jail(BaseModel):
    """One sandbox's jail: what it mounts and how it starts the server."""

    model_config = ConfigDict(frozen=True)

    workspace: Path
    server_package: Path
    python_prefix: Path | None = None  # bound read-only when the interpreter is not under /usr
    network: bool = False
    hidden_paths: tuple[Path, ...] = ()

    def visible_roots(self) -> list[Path]:
        """The host directories mounted into the jail (a path below one of them is visible)."""
        roots = [Path(d) for d in SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
        if self.python_prefix is not None:
            roots.append(self.python_prefix)
        return roots

    def argv(
        self,
        bwrap: str,
        command: list[str],
        *,
        token_fd: int,
        sources: Mapping[Path, Path] | None = None,
    ) -> list[str]:
        """The bubblewrap command line that runs ``command`` (the server) in the jail.

        ``token_fd`` is a pipe holding the token: bubblewrap copies it into a file in the
        jail's private /tmp, which the server reads and deletes before anything else runs.
        ``sources``: where bubblewrap finds the workspace, the server package or the Python
        prefix when not at their own paths (``private_mounts``: for an unprivileged jail user
        who could not reach them); inside the jail each is at its own path still.
        """

        def source(path: Path) -> str:
            return str((sources or {}).get(path, path))

        args = [
            bwrap,
            "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--new-session", "--die-with-parent",
        ]  # fmt: skip
        if not self.network:
            args.append("--unshare-net")
        for directory in SYSTEM_DIRS:
            if os.path.islink(directory):  # merged /usr: /bin -> usr/bin
                args += ["--symlink", os.readlink(directory), directory]
            elif os.path.isdir(directory):
                args += ["--ro-bind", directory, directory]
        if self.python_prefix is not None:
            args += ["--ro-bind", source(self.python_prefix), str(self.python_prefix)]
        if self.network:
            args += self._resolver()
        args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        args += ["--ro-bind", source(self.server_package), f"{SERVER_ROOT}/chronicle_sandbox"]
        inside, outside = self._masks()
        remount: list[str] = []
        args += self._mask_args(outside, remount)
        args += ["--bind", source(self.workspace), str(self.workspace)]
        args += self._mask_args(inside, remount)
        for directory in remount:
            args += ["--remount-ro", directory]
        args += ["--file", str(token_fd), TOKEN_FILE, "--chdir", SERVER_ROOT, "--", *command]
        return args

    def _resolver(self) -> list[str]:
        """/etc/resolv.conf often links into /run (systemd-resolved): bind its target too."""
        target = os.path.realpath("/etc/resolv.conf")
        if os.path.isfile(target) and not _below(Path(target), [Path("/etc"), Path("/usr")]):
            return ["--ro-bind", target, target]
        return []

    def _masks(self) -> tuple[list[Path], list[Path]]:
        """Paths to hide: (those inside the workspace, those elsewhere in the jail)."""
        wanted = [Path(p) for pattern in SECRET_FILES for p in glob.glob(pattern)]
        wanted += [Path(p) for p in SECRET_DIRS]
        wanted += [Path(os.path.realpath(p)) for p in self.hidden_paths]
        inside: list[Path] = []
        outside: list[Path] = []
        roots = self.visible_roots()
        for path in wanted:
            if not os.path.lexists(path):
                continue
            if path == self.workspace:
                continue  # the workspace cannot be hidden from itself
            if _below(path, [self.workspace]):
                inside.append(path)
            elif _below(path, roots):
                outside.append(path)
        return inside, outside

    @staticmethod
    def _mask_args(paths: Iterable[Path], remount: list[str]) -> list[str]:
        args: list[str] = []
        for path in paths:
            if path.is_dir() and not path.is_symlink():
                args += ["--tmpfs", str(path)]
                remount.append(str(path))
            else:
                args += ["--ro-bind", "/dev/null", str(path)]
        return args


#: Where bubblewrap puts the token file (the jail's private /tmp; deleted once read).
TOKEN_FILE = "/tmp/.chronicle-token"


def _below(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


def system_python(explicit: str | None = None) -> tuple[str, Path | None]:
    """The interpreter for the server in the jail, and a directory to bind for it (or None).

    The system's ``python3`` under /usr is already in the jail; without one, this process's
    own installation (``sys.base_prefix``) is bound read-only.
    """
    if explicit is not None:
        real = Path(os.path.realpath(explicit))
        if _below(real, [Path("/usr")]):
            return explicit, None
        return str(real), real.parent.parent
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate, None
    prefix = Path(sys.base_prefix)
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(prefix / "bin" / name), prefix


def sandbox_environment(workspace: Path, passed: Mapping[str, str] | None) -> dict[str, str]:
    """The whole environment of a sandbox: an allow-list of host variables, HOME in the
    workspace, and what the caller passes on purpose. Never this process's environment."""
    env = {name: os.environ[name] for name in ENV_ALLOWED if name in os.environ}
    env.update({name: value for name, value in os.environ.items() if name.startswith("LC_")})
    env.setdefault("PATH", DEFAULT_PATH)
    env["HOME"] = str(workspace)
    env.update(passed or {})
    return env
