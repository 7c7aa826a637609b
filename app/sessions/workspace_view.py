"""A session's workspace as the page shows it (``GET /api/sessions/ID/workspace``): the files
at the end, each marked added, modified, deleted or unchanged, with its part of the diff
against the start.

Built from the log alone: the start (``workspace.snapshot``) and the last run's change
(``workspace.diff``, always against that start). A plain directory's start lists every file;
a git start records its commit and uncommitted changes only, so the files the run did not
touch beyond those are not in the log (``complete`` is false, and the page says so).

Noise (app/runtime/workspace_noise.py) is not dropped: what the diff left out is counted
(``left_out``), and noise that is in the log (a start's ``__pycache__``, a diff recorded
before the rule) is listed with the pattern that calls it noise, for the page to fold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal
from uuid import UUID

from pydantic import BaseModel

from app.events.workspace import LeftOut, Vcs, WorkspaceDiff, WorkspaceSnapshot
from app.runtime.workspace_noise import noise_pattern
from app.sessions.sql.workspace_events import workspace_seqs

if TYPE_CHECKING:
    from app.store import EventStore

Status = Literal["added", "modified", "deleted", "unchanged"]
_HEADER = "diff --git "
#: git's C-style escapes in a quoted path (``core.quotepath=off`` quotes only these).
_ESCAPES = {"n": 10, "t": 9, '"': 34, "\\": 92, "a": 7, "b": 8, "f": 12, "r": 13, "v": 11}


class FilePatch(BaseModel):
    """One file's part of a git patch."""

    path: str
    status: Literal["added", "modified", "deleted"]
    binary: bool
    text: str


class WorkspaceEntry(BaseModel):
    path: str
    status: Status
    #: Bytes at the start, where the log says (a plain directory's manifest, a skipped file).
    size: int | None = None
    binary: bool = False
    #: This file's part of the diff against the start ("" when unchanged).
    diff: str = ""
    #: The pattern that calls it noise (the page folds it), or None.
    noise: str | None = None
    #: Why its content was not recorded (over the size budget, unreadable), or None.
    skipped: str | None = None


class WorkspaceView(BaseModel):
    session_id: UUID
    #: How the start was recorded; None when the session recorded no workspace.
    vcs: Vcs | None
    commit: str | None = None
    branch: str | None = None
    start_seq: int | None = None
    change_seq: int | None = None
    #: How the run that recorded the change ended (finished, stopped, ...); None: no run has.
    reason: str | None = None
    #: What the recording said instead of a state (a workspace the host could not read).
    message: str = ""
    #: Every file of the start is in the log (a plain directory); false for a git start.
    complete: bool = False
    files: list[WorkspaceEntry]
    #: Changed files by status, noise not counted.
    added: int = 0
    modified: int = 0
    deleted: int = 0
    #: Changed files the diff left out as noise, per pattern (never recorded).
    left_out: list[LeftOut]
    #: Files in the log that are noise, per pattern (listed, folded by the page).
    folded: list[LeftOut]


def _unquote(quoted: str) -> tuple[str, int]:
    """A C-quoted git path (``"a/x\\ty"``) as text, and the index just past its closing
    quote."""
    out = bytearray()
    i = 1
    while i < len(quoted) and quoted[i] != '"':
        char = quoted[i]
        if char == "\\" and i + 1 < len(quoted):
            following = quoted[i + 1]
            if following in "01234567":
                out.append(int(quoted[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(_ESCAPES.get(following, ord(following) & 0xFF))
            i += 2
            continue
        out += char.encode("utf-8", errors="surrogateescape")
        i += 1
    return out.decode("utf-8", errors="replace"), i + 1


def header_path(header: str) -> str:
    """The path of a ``diff --git a/P b/P`` line (without its prefix; renames are never
    recorded, so both names are P)."""
    names = header[len(_HEADER) :].rstrip("\n")
    if names.startswith('"'):
        path, _ = _unquote(names)
        return path.removeprefix("a/")
    half = (len(names) - 5) // 2  # "a/" P " b/" P
    if (
        half > 0
        and names[2 + half : 5 + half] == " b/"
        and names[2 : 2 + half] == names[5 + half :]
    ):
        return names[2 : 2 + half]
    return names.split(" b/", 1)[0].removeprefix("a/")


def split_patch(patch: str) -> list[FilePatch]:
    """A git patch (``diff-tree -p --binary``) file by file, in its order."""
    chunks: list[list[str]] = []
    for line in patch.splitlines(keepends=True):
        if line.startswith(_HEADER):
            chunks.append([line])
        elif chunks:
            chunks[-1].append(line)
    found = []
    for chunk in chunks:
        status: Literal["added", "modified", "deleted"] = "modified"
        for line in chunk[1:4]:
            if line.startswith("new file mode"):
                status = "added"
            elif line.startswith("deleted file mode"):
                status = "deleted"
        binary = any(
            line == "GIT binary patch\n" or line.startswith("Binary files ") for line in chunk
        )
        found.append(
            FilePatch(path=header_path(chunk[0]), status=status, binary=binary, text="".join(chunk))
        )
    return found


def _counts(patterns: Sequence[str | None]) -> list[LeftOut]:
    counted = Counter(p for p in patterns if p is not None)
    return [LeftOut(pattern=p, files=n) for p, n in counted.items()]


def build_view(
    session_id: UUID,
    snapshot: WorkspaceSnapshot | None,
    change: WorkspaceDiff | None,
    leave_out: Sequence[str],
    *,
    start_seq: int | None = None,
    change_seq: int | None = None,
) -> WorkspaceView:
    """The end's files from the start and the last change (``leave_out``: the noise rule's
    patterns, for folding)."""
    entries: dict[str, WorkspaceEntry] = {}
    if snapshot is not None:
        if snapshot.vcs == "none":
            for file in snapshot.files:
                entries[file.path] = WorkspaceEntry(
                    path=file.path, status="unchanged", size=file.size,
                    binary=file.encoding == "base64",
                )  # fmt: skip
        elif snapshot.vcs == "git":  # the start's uncommitted files: all the log knows of it
            for part in split_patch(snapshot.diff):
                if part.status != "deleted":
                    entries[part.path] = WorkspaceEntry(
                        path=part.path, status="unchanged", binary=part.binary
                    )
        for skipped in snapshot.skipped:
            entries.setdefault(
                skipped.path,
                WorkspaceEntry(path=skipped.path, status="unchanged", size=skipped.size,
                               skipped=skipped.reason),
            )  # fmt: skip
    if change is not None:
        for part in split_patch(change.diff):
            before = entries.get(part.path)
            entries[part.path] = WorkspaceEntry(
                path=part.path, status=part.status, binary=part.binary, diff=part.text,
                size=before.size if before is not None and part.status != "added" else None,
            )  # fmt: skip
        for skipped in change.skipped:
            entries.setdefault(
                skipped.path,
                WorkspaceEntry(path=skipped.path, status="unchanged", size=skipped.size,
                               skipped=skipped.reason),
            )  # fmt: skip
    files = []
    for path in sorted(entries):
        entry = entries[path]
        entry.noise = noise_pattern(path, leave_out) if leave_out else None
        files.append(entry)
    shown = Counter(f.status for f in files if f.noise is None)
    messages = [
        m for m in (snapshot.message if snapshot else "", change.message if change else "") if m
    ]
    return WorkspaceView(
        session_id=session_id,
        vcs=snapshot.vcs if snapshot is not None else None,
        commit=snapshot.commit if snapshot is not None else None,
        branch=snapshot.branch if snapshot is not None else None,
        start_seq=start_seq,
        change_seq=change_seq,
        reason=change.reason if change is not None else None,
        message="; ".join(messages),
        complete=snapshot is not None and snapshot.vcs == "none",
        files=files,
        added=shown["added"],
        modified=shown["modified"],
        deleted=shown["deleted"],
        left_out=list(change.left_out) if change is not None else [],
        folded=_counts([f.noise for f in files]),
    )


async def read_workspace(
    store: EventStore, session_id: UUID, leave_out: Sequence[str]
) -> WorkspaceView:
    """The view of a session's recorded workspace (its two events read, blobs resolved)."""
    seqs = await workspace_seqs(store, session_id)
    snapshot = change = None
    if seqs.start is not None:
        [event] = await store.read(session_id, after_seq=seqs.start - 1, limit=1)
        snapshot = WorkspaceSnapshot.model_validate(event.payload)
    if seqs.change is not None:
        [event] = await store.read(session_id, after_seq=seqs.change - 1, limit=1)
        change = WorkspaceDiff.model_validate(event.payload)
    return build_view(
        session_id, snapshot, change, leave_out, start_seq=seqs.start, change_seq=seqs.change
    )
