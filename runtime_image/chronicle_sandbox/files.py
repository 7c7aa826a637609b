"""File actions: read with line ranges, write, and the str_replace_editor commands.

Every file is opened beneath the workspace (``paths.Workspace``), and what is opened is then
checked through its descriptor (``fstat``), so a path swapped between a check and its use
cannot lead anywhere else. Every write replaces the file at once (``atomic``): a failed write
leaves the file as it was, and the undo history is updated before the write (and put back
when it failed).
"""

from __future__ import annotations

import difflib
import errno
import os
import stat
from typing import Any

from .atomic import NotRegularFile, replace_file
from .listing import listing
from .paths import PathError, Workspace
from .quota import WorkspaceFull, WorkspaceQuota
from .text import printable

MAX_FILE_BYTES = 5 * 1024 * 1024
BINARY_PROBE = 8192
#: Never wait on a FIFO someone left in the workspace; no effect on regular files.
READ = os.O_RDONLY | os.O_NONBLOCK


class FileActionError(ValueError):
    """A file action that cannot be done; the message says why."""


class AlreadyExists(FileActionError):
    """The file to create is already there."""


class NotFound(FileActionError):
    """There is no such file."""


class TooLarge(FileActionError):
    """The file is over the size limit of the action."""


def read_all(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, max(size, 65536))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


class Files:
    """File operations in one workspace, with an undo history per file for ``undo_edit``."""

    def __init__(
        self, workspace: str, *, confine: bool = True, quota: WorkspaceQuota | None = None
    ) -> None:
        self.workspace = workspace
        self.confine = confine
        self.quota = quota
        self.paths = Workspace(workspace, confine=confine)
        self._history: dict[str, list[str | None]] = {}

    # -- helpers -------------------------------------------------------------------------

    def _shown(self, path: str) -> str:
        try:
            return self.paths.shown(self.paths.relative(path))
        except PathError as exc:
            raise FileActionError(str(exc)) from None

    def open(self, path: str, flags: int, mode: int = 0o666, *, make_parents: bool = False) -> int:
        """``path`` opened beneath the workspace; refusals become ``FileActionError``."""
        try:
            return self.paths.open(path, flags, mode, make_parents=make_parents)
        except (PathError, OSError) as exc:
            raise self._failure(path, exc) from None

    @staticmethod
    def _failure(path: str, exc: Exception) -> FileActionError:
        """What went wrong with ``path``, worded for the user."""
        if isinstance(exc, PathError):
            return FileActionError(str(exc))
        if isinstance(exc, FileNotFoundError):
            return NotFound(f"{path} does not exist")
        if isinstance(exc, FileExistsError):
            return AlreadyExists(f"{path} already exists")
        if isinstance(exc, IsADirectoryError):
            return FileActionError(f"{path} is a directory")
        if isinstance(exc, NotADirectoryError):
            return FileActionError(f"a parent of {path} is not a directory")
        if isinstance(exc, NotRegularFile) or (
            isinstance(exc, OSError) and exc.errno == errno.ENXIO
        ):  # a FIFO nobody reads, a socket, a device
            return FileActionError(f"{path} is not a regular file")
        if isinstance(exc, OSError):
            return FileActionError(f"{path}: {exc.strerror or exc}")
        return FileActionError(f"{path}: {exc}")

    def read_bytes(self, path: str, limit: int) -> bytes:
        """The bytes of the regular file ``path``, refused when over ``limit`` bytes."""
        fd = self.open(path, READ)
        try:
            return self._bytes_of(fd, path, limit)
        finally:
            os.close(fd)

    def write_bytes(self, path: str, data: bytes, *, exclusive: bool = False) -> None:
        """Make ``path`` hold ``data`` (parents are created), all at once or not at all;
        ``exclusive`` never overwrites; refused when it would pass the workspace's size
        limit."""
        if self.quota is not None:
            try:
                self.quota.check_write(path, len(data) - self._size_of(path))
            except WorkspaceFull as exc:
                raise FileActionError(str(exc)) from None
        try:
            replace_file(self.paths, path, data, exclusive=exclusive)
        except (PathError, FileExistsError, IsADirectoryError, NotADirectoryError) as exc:
            raise self._failure(path, exc) from None
        except NotRegularFile as exc:
            raise self._failure(path, exc) from None
        except OSError as exc:  # the disk is full, a size limit, permissions...
            unchanged = "was not created" if exclusive else "was not changed"
            raise FileActionError(
                f"writing {path} failed: {exc.strerror or exc}; the file {unchanged}"
            ) from None

    def _size_of(self, path: str) -> int:
        """The size of the file a write would replace (0: none, or not one we can open)."""
        try:
            fd = self.paths.open(path, READ)
        except (PathError, OSError):
            return 0
        try:
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    @staticmethod
    def _bytes_of(fd: int, shown: str, limit: int) -> bytes:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FileActionError(f"{shown} is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise FileActionError(f"{shown} is not a regular file")
        if info.st_size > limit:
            raise TooLarge(
                f"{shown} is {info.st_size:,} bytes, over the {limit:,}-byte limit for file "
                "actions; use the shell (head, sed -n, grep) to look at parts of it"
            )
        data = read_all(fd, info.st_size)
        if len(data) > limit:
            raise TooLarge(f"{shown} grew past the {limit:,}-byte limit while read")
        return data

    def _text_of(self, fd: int, shown: str) -> str:
        data = self._bytes_of(fd, shown, MAX_FILE_BYTES)
        if b"\x00" in data[:BINARY_PROBE]:
            raise FileActionError(f"{shown} is a binary file; file actions work on text")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise FileActionError(f"{shown} is not UTF-8 text") from None

    def _read_text(self, path: str) -> str:
        fd = self.open(path, READ)
        try:
            return self._text_of(fd, path)
        finally:
            os.close(fd)

    def _existing_text(self, path: str) -> str | None:
        """The text of ``path``, or None when there is no such file yet."""
        try:
            fd = self.paths.open(path, READ)
        except FileNotFoundError:
            return None
        except (PathError, OSError):
            fd = self.open(path, READ)  # raises the same failure, worded for the user
        try:
            return self._text_of(fd, path)
        finally:
            os.close(fd)

    def _write_text(self, path: str, content: str, *, exclusive: bool = False) -> None:
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = printable(content[exc.start : exc.end])
            raise FileActionError(
                f"the content is not valid text: it holds the lone surrogate {bad} at "
                f"character {exc.start}, which UTF-8 cannot store; nothing was written"
            ) from None
        if len(data) > MAX_FILE_BYTES:
            raise FileActionError(f"content over the {MAX_FILE_BYTES:,}-byte limit")
        self.write_bytes(path, data, exclusive=exclusive)

    def _write_remembered(
        self, key: str, path: str, old: str | None, new: str, *, exclusive: bool = False
    ) -> None:
        """Write ``new``, with ``old`` on the undo history first (taken back if it failed)."""
        history = self._history.setdefault(key, [])
        history.append(old)
        try:
            self._write_text(path, new, exclusive=exclusive)
        except BaseException:
            history.pop()
            raise

    def _diff(self, path: str, old: str, new: str) -> str:
        name = self._diff_name(path)
        return "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )

    def _diff_name(self, path: str) -> str:
        """``path`` relative to the workspace, as git names files (``a/src/x.py``)."""
        try:
            relative = self.paths.relative(path)
        except PathError:
            relative = path
        if relative == ".." or relative.startswith("../"):  # outside (only unconfined)
            relative = self.paths.shown(relative).lstrip("/")
        return relative

    @staticmethod
    def _numbered(text: str, first: int = 1) -> str:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, first))

    # -- actions -------------------------------------------------------------------------

    def read(self, path: str, start: int = 1, end: int | None = None) -> dict[str, Any]:
        lines = self._read_text(path).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if start > max(len(lines), 1):
            raise FileActionError(f"start line {start} is past the end ({len(lines)} lines)")
        chosen = lines[start - 1 : end]
        return {
            "kind": "file.read.output",
            "path": path,
            "content": self._numbered("\n".join(chosen), start),
        }

    def write(self, path: str, content: str) -> dict[str, Any]:
        key = self._shown(path)
        old = self._existing_text(path)
        self._write_remembered(key, path, old, content)
        return {
            "kind": "file.write.output",
            "path": path,
            "diff": self._diff(path, old or "", content),
        }

    def edit(self, action: dict[str, Any]) -> dict[str, Any]:
        command = action.get("command")
        path = action.get("path") or ""
        key = self._shown(path)
        if command == "view":
            return self._view(path, action.get("view_range"))
        if command == "create":
            text = action.get("file_text")
            if text is None:
                raise FileActionError("create needs file_text")
            try:
                self._write_remembered(key, path, None, text, exclusive=True)
            except AlreadyExists:
                raise FileActionError(f"{path} already exists; create does not overwrite") from None
            return self._edited(path, "", text)
        old = self._read_text(path)
        if command == "str_replace":
            new = self._str_replace(path, old, action.get("old_str"), action.get("new_str") or "")
        elif command == "insert":
            new = self._insert(old, action.get("insert_line"), action.get("new_str"))
        elif command == "undo_edit":
            history = self._history.get(key)
            if not history:
                raise FileActionError(f"no edit of {path} to undo")
            previous = history[-1]  # taken off only once the undo is done
            if previous is None:
                try:
                    self.paths.unlink(path)
                except (PathError, OSError) as exc:
                    raise FileActionError(f"cannot remove {path}: {exc}") from None
                history.pop()
                return self._edited(path, old, "", content="")
            self._write_text(path, previous)
            history.pop()
            return self._edited(path, old, previous)
        else:
            raise FileActionError(
                f"unknown editor command {command!r}; use view, create, str_replace, insert "
                "or undo_edit"
            )
        self._write_remembered(key, path, old, new)
        return self._edited(path, old, new)

    def _edited(self, path: str, old: str, new: str, content: str | None = None) -> dict[str, Any]:
        return {
            "kind": "file.edit.output",
            "path": path,
            "diff": self._diff(path, old, new),
            "content": content if content is not None else "",
        }

    def _str_replace(self, path: str, text: str, old_str: Any, new_str: str) -> str:
        if not old_str:
            raise FileActionError("str_replace needs a non-empty old_str")
        count = text.count(old_str)
        if count == 0:
            raise FileActionError(f"old_str does not occur in {path}; nothing was replaced")
        if count > 1:
            lines = []
            start = 0
            while (found := text.find(old_str, start)) != -1:
                lines.append(text.count("\n", 0, found) + 1)
                start = found + 1
            raise FileActionError(
                f"old_str occurs {count} times in {path} (lines {', '.join(map(str, lines))}); "
                "include more context so it matches exactly once"
            )
        return text.replace(old_str, new_str, 1)

    @staticmethod
    def _insert(text: str, line: Any, new_str: Any) -> str:
        if new_str is None:
            raise FileActionError("insert needs new_str")
        lines = text.split("\n")
        trailing = lines and lines[-1] == ""
        if trailing:
            lines.pop()
        if not isinstance(line, int) or not 0 <= line <= len(lines):
            raise FileActionError(f"insert_line must be between 0 and {len(lines)}")
        added = new_str.rstrip("\n").split("\n")
        lines[line:line] = added
        return "\n".join(lines) + ("\n" if trailing or not text else "")

    def _view(self, path: str, view_range: Any) -> dict[str, Any]:
        fd = self.open(path, READ)
        try:
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                return {
                    "kind": "file.edit.output",
                    "path": path,
                    "diff": "",
                    "content": listing(fd, self._shown(path)),
                }
            text = self._text_of(fd, path)
        finally:
            os.close(fd)
        first, last = 1, None
        if view_range:
            first, last = int(view_range[0]), int(view_range[1])
            last = None if last == -1 else last
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return {
            "kind": "file.edit.output",
            "path": path,
            "diff": "",
            "content": self._numbered("\n".join(lines[first - 1 : last]), first),
        }
