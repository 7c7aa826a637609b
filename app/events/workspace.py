"""What a session's workspace held when it started, and what the run changed in it.

Forking restores the start (``workspace.snapshot``) into a fresh directory, and offline
scoring reads the change (``workspace.diff``) without the sandbox. Both are recorded from the
host's view of the workspace (see ``app.runtime.workspace_state``).
"""

from __future__ import annotations

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


class WorkspaceDiff(Event):
    """The change a run made to the workspace, against the recorded start: a binary-safe git
    patch (``git apply`` it to the restored start) recorded when the run ends, whatever the
    end (``reason``: finished, stopped, error, a limit, interrupted)."""

    kind: Literal["workspace.diff"] = "workspace.diff"
    source: Source = "environment"
    reason: str = ""
    diff: str = ""
    changed: list[str] = Field(default_factory=list)
    tree: str | None = None
    skipped: list[SkippedFile] = Field(default_factory=list)
    message: str = ""
