"""Paths an action names, resolved inside the workspace; anything leading out is refused."""

from __future__ import annotations

import os


class PathError(ValueError):
    """A path that is outside the workspace or otherwise unusable."""


def resolve(workspace: str, path: str, *, confine: bool = True) -> str:
    """The real absolute path for ``path`` (relative to the workspace, or absolute in it).

    With ``confine``, ``..``, absolute paths outside the workspace and symlinks whose target
    is outside are refused. (The Docker runtime's workspace is the container's own world, and
    the local runtime always confines.)
    """
    if not path:
        raise PathError("a path is required")
    if "\x00" in path:
        raise PathError("a path cannot contain NUL characters")
    root = os.path.realpath(workspace)
    if not os.path.isdir(root):
        raise PathError(f"the workspace {workspace} does not exist (was it deleted?)")
    candidate = path if os.path.isabs(path) else os.path.join(root, path)
    real = os.path.realpath(candidate)
    if confine and os.path.commonpath([root, real]) != root:
        raise PathError(f"{path} is outside the workspace {workspace}")
    return real
