"""File actions: read with line ranges, write, and the str_replace_editor commands."""

from __future__ import annotations

import difflib
import os
from typing import Any

from .paths import PathError, resolve

MAX_FILE_BYTES = 5 * 1024 * 1024
BINARY_PROBE = 8192


class FileActionError(ValueError):
    """A file action that cannot be done; the message says why."""


class Files:
    """File operations in one workspace, with an undo history per file for ``undo_edit``."""

    def __init__(self, workspace: str, *, confine: bool = True) -> None:
        self.workspace = workspace
        self.confine = confine
        self._history: dict[str, list[str | None]] = {}

    # -- helpers -------------------------------------------------------------------------

    def _path(self, path: str) -> str:
        try:
            return resolve(self.workspace, path, confine=self.confine)
        except PathError as exc:
            raise FileActionError(str(exc)) from None

    def _read_text(self, real: str, shown: str) -> str:
        if not os.path.exists(real):
            raise FileActionError(f"{shown} does not exist")
        if os.path.isdir(real):
            raise FileActionError(f"{shown} is a directory")
        size = os.path.getsize(real)
        if size > MAX_FILE_BYTES:
            raise FileActionError(
                f"{shown} is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit for file "
                "actions; use the shell (head, sed -n, grep) to look at parts of it"
            )
        with open(real, "rb") as handle:
            data = handle.read()
        if b"\x00" in data[:BINARY_PROBE]:
            raise FileActionError(f"{shown} is a binary file; file actions work on text")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise FileActionError(f"{shown} is not UTF-8 text") from None

    def _write_text(self, real: str, content: str) -> None:
        if len(content.encode("utf-8")) > MAX_FILE_BYTES:
            raise FileActionError(f"content over the {MAX_FILE_BYTES:,}-byte limit")
        os.makedirs(os.path.dirname(real), exist_ok=True)
        with open(real, "w", encoding="utf-8") as handle:
            handle.write(content)

    def _remember(self, real: str, old: str | None) -> None:
        self._history.setdefault(real, []).append(old)

    @staticmethod
    def _diff(shown: str, old: str, new: str) -> str:
        return "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                fromfile=f"a/{shown}",
                tofile=f"b/{shown}",
            )
        )

    @staticmethod
    def _numbered(text: str, first: int = 1) -> str:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, first))

    # -- actions -------------------------------------------------------------------------

    def read(self, path: str, start: int = 1, end: int | None = None) -> dict[str, Any]:
        real = self._path(path)
        lines = self._read_text(real, path).split("\n")
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
        real = self._path(path)
        old = self._read_text(real, path) if os.path.isfile(real) else None
        self._write_text(real, content)
        self._remember(real, old)
        return {
            "kind": "file.write.output",
            "path": path,
            "diff": self._diff(path, old or "", content),
        }

    def edit(self, action: dict[str, Any]) -> dict[str, Any]:
        command = action.get("command")
        path = action.get("path") or ""
        real = self._path(path)
        if command == "view":
            return self._view(real, path, action.get("view_range"))
        if command == "create":
            if os.path.exists(real):
                raise FileActionError(f"{path} already exists; create does not overwrite")
            text = action.get("file_text")
            if text is None:
                raise FileActionError("create needs file_text")
            self._write_text(real, text)
            self._remember(real, None)
            return self._edited(path, "", text)
        old = self._read_text(real, path)
        if command == "str_replace":
            new = self._str_replace(path, old, action.get("old_str"), action.get("new_str") or "")
        elif command == "insert":
            new = self._insert(old, action.get("insert_line"), action.get("new_str"))
        elif command == "undo_edit":
            history = self._history.get(real)
            if not history:
                raise FileActionError(f"no edit of {path} to undo")
            previous = history.pop()
            if previous is None:
                os.remove(real)
                return self._edited(path, old, "", content="")
            self._write_text(real, previous)
            return self._edited(path, old, previous)
        else:
            raise FileActionError(
                f"unknown editor command {command!r}; use view, create, str_replace, insert "
                "or undo_edit"
            )
        self._write_text(real, new)
        self._remember(real, old)
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

    def _view(self, real: str, path: str, view_range: Any) -> dict[str, Any]:
        if os.path.isdir(real):
            return {
                "kind": "file.edit.output",
                "path": path,
                "diff": "",
                "content": self._listing(real),
            }
        text = self._read_text(real, path)
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

    @staticmethod
    def _listing(root: str) -> str:
        """Files and directories up to two levels deep, hidden entries left out."""
        entries = [root]
        for name in sorted(os.listdir(root)):
            if name.startswith("."):
                continue
            full = os.path.join(root, name)
            entries.append(full + ("/" if os.path.isdir(full) else ""))
            if os.path.isdir(full) and not os.path.islink(full):
                try:
                    children = sorted(os.listdir(full))
                except OSError:
                    continue
                for child in children:
                    if child.startswith("."):
                        continue
                    inner = os.path.join(full, child)
                    entries.append(inner + ("/" if os.path.isdir(inner) else ""))
        return "\n".join(entries)
