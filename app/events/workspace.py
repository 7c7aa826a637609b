"""What a session's workspace held when it started, and what the run changed in it.

Forking restores the start (``workspace.snapshot``) into a fresh directory, and offline
scoring reads the change (``workspace.diff``) without the sandbox. Both are recorded from the
host's view of the workspace (see ``app.runtime.workspace_state``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.events.base import Event, Source

#: How a snapshot describes the start: a git repository (commit + uncommitted diff), a plain
#: directory (a manifest of its files), or nothing (the host cannot see the workspace, e.g. a
#: remote runtime).
Vcs = Literal["git", "none", "unavailable"]


class WorkspaceFile(BaseModel):
    """One file of a plain directory's manifest. Text files are stored as text, any other
    bytes as base64 (``encoding``); a symbolic link stores its target, never what it points to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    type: Literal["file", "executable", "symlink"]
    size: int = Field(ge=0)
    sha256: str
    encoding: Literal["text", "base64", "link"]
    content: str


class SkippedFile(BaseModel):
    """A file left out of a snapshot or a diff, and why (over the size budget, unreadable)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    size: int = Field(ge=0)
    reason: str


class LeftOut(BaseModel):
    """How many changed files a diff left out as noise under one pattern
    (app/runtime/workspace_noise.py has the rule)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pattern: str
    files: int = Field(ge=0)


class WorkspaceSnapshot(Event):
    """The workspace at the start of a session.

    For a git repository: ``commit`` (None before the first commit), ``branch`` (None when
    detached) and ``diff``, a binary-safe git patch of every uncommitted change against the
    commit, untracked files included (ignored ones are not). For a plain directory: ``files``.
    Either way ``tree`` is the git tree id of the recorded state, ``skipped`` names what did
    not fit ``max_bytes`` (the budget for recorded contents; a larger file is named, not kept).
    """

    kind: Literal["workspace.snapshot"] = "workspace.snapshot"
    source: Source = "environment"
    vcs: Vcs
    commit: str | None = None
    branch: str | None = None
    diff: str = ""
    files: list[WorkspaceFile] = Field(default_factory=list)
    tree: str | None = None
    skipped: list[SkippedFile] = Field(default_factory=list)
    max_bytes: int = Field(default=0, ge=0)
    message: str = ""


def unsafe_entry(files: Sequence[WorkspaceFile]) -> str | None:
    """Why a manifest cannot be restored as it stands, or None: the one rule a fork's restore
    and ``chronicle import`` both apply, because a snapshot is data from outside (an import,
    any login of the application) and restoring it writes files on the host.

    Each path must be relative and plain (no empty, ``.`` or ``..`` part, no ``.git``), name
    one entry only, and lie beneath no other entry: a file cannot hold files, and a link must
    never be walked through (``x -> /etc`` then ``x/passwd`` would write outside). A recorded
    workspace never holds any of these (git records neither ``.git`` nor paths past a link).
    """
    seen: dict[str, str] = {}
    for entry in files:
        path = entry.path
        if not path or "\x00" in path or path.startswith("/"):
            return f"{path!r} is not a relative path"
        parts = path.split("/")
        if any(part in ("", ".", "..") for part in parts):
            return f"{path!r} has an empty, '.' or '..' part"
        if any(part.lower() == ".git" for part in parts):
            return f"{path!r} is inside a .git directory"
        if path in seen:
            return f"{path!r} appears twice"
        if (entry.type == "symlink") != (entry.encoding == "link"):
            return f"{path!r} is a {entry.type} stored as {entry.encoding!r}"
        if entry.type == "symlink" and (not entry.content or "\x00" in entry.content):
            return f"{path!r} is a link with an empty target or a NUL in it"
        seen[path] = entry.type
    for path in seen:
        parts = path.split("/")
        for end in range(1, len(parts)):
            above = "/".join(parts[:end])
            if above in seen:
                what = "a link" if seen[above] == "symlink" else "a file"
                return f"{path!r} lies beneath {above!r}, which is {what}"
    return None


#: A git object id as git prints one: SHA-1 or SHA-256, lowercase hex.
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
#: What no branch name holds (git check-ref-format): control characters, space, ``~^:?*[\``,
#: ``..``, ``@{``, ``//``, a part starting with ``.``, an end in ``/``, ``.`` or ``.lock``.
_NOT_IN_BRANCH = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|(^|/)\.|/$|\.$|\.lock$")


def unsafe_start(snapshot: WorkspaceSnapshot) -> str | None:
    """Why a recorded start cannot be restored or resumed from, or None: ``unsafe_entry`` of
    its files, and for git a ``commit`` that is an object id and a ``branch`` that is a branch
    name. Both are handed to git on the host as arguments (``checkout``, ``read-tree``), where
    ``--index-output=/any/file`` would be an option that writes a file, and ``HEAD`` or
    ``main`` would check out whatever the cloned repository holds; a recorded start only ever
    holds the id git printed and the name of the branch that was checked out."""
    if snapshot.commit is not None and not _OBJECT_ID.fullmatch(snapshot.commit):
        return f"commit {snapshot.commit!r} is not a git object id (40 or 64 hex digits)"
    if snapshot.tree is not None and not _OBJECT_ID.fullmatch(snapshot.tree):
        return f"tree {snapshot.tree!r} is not a git object id (40 or 64 hex digits)"
    branch = snapshot.branch
    if branch is not None and (
        not branch or branch.startswith("-") or branch == "@" or _NOT_IN_BRANCH.search(branch)
    ):
        return f"branch {branch!r} is not a branch name"
    return unsafe_entry(snapshot.files)


class WorkspaceDiff(Event):
    """The change a run made to the workspace, against the recorded start: a binary-safe git
    patch (``git apply`` it to the restored start) recorded when the run ends, whatever the
    end (``reason``: finished, stopped, error, a limit, interrupted). Noise (``__pycache__``,
    ``*.pyc``, ...: app/runtime/workspace_noise.py) is left out of it and counted per pattern
    in ``left_out``; like a skipped file, a left-out one stays as it was at the start."""

    kind: Literal["workspace.diff"] = "workspace.diff"
    source: Source = "environment"
    reason: str = ""
    diff: str = ""
    changed: list[str] = Field(default_factory=list)
    tree: str | None = None
    skipped: list[SkippedFile] = Field(default_factory=list)
    left_out: list[LeftOut] = Field(default_factory=list)
    message: str = ""


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (
    WorkspaceSnapshot,
    WorkspaceDiff,
)
