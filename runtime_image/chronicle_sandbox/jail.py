"""Bubblewrap around the shell: read-only root, writable workspace, no network by default."""

from __future__ import annotations

import shutil


def bubblewrap_prefix(workspace: str, *, network: bool) -> list[str] | None:
    """The command prefix that runs bash in a bubblewrap jail, or None without ``bwrap``."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    prefix = [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--bind", workspace, workspace,
        "--chdir", workspace,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--setenv", "HOME", workspace,
    ]  # fmt: skip
    if not network:
        prefix.append("--unshare-net")
    return [*prefix, "--"]
