"""Actions: what the agent asks for. Those with a ``handled_by`` service are answered by one
observation from that service's action worker; ``think`` and ``finish`` run nowhere."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from app.events.base import Action, Event, Service


class Run(Action):
    """Run a shell command in the session's persistent shell (or send input to it)."""

    handled_by: ClassVar[Service | None] = "sandbox"
    kind: Literal["run"] = "run"
    command: str
    timeout: float | None = Field(default=None, gt=0)
    is_input: bool = False


class FileRead(Action):
    """Read a file, optionally a range of lines (1-based, ``end`` inclusive)."""

    handled_by: ClassVar[Service | None] = "sandbox"
    kind: Literal["file.read"] = "file.read"
    path: str
    start: int = Field(default=1, ge=1)
    end: int | None = Field(default=None, ge=1)


class FileWrite(Action):
    """Write a whole file, creating parent directories."""

    handled_by: ClassVar[Service | None] = "sandbox"
    kind: Literal["file.write"] = "file.write"
    path: str
    content: str


class FileEdit(Action):
    """One ``str_replace_editor`` command."""

    handled_by: ClassVar[Service | None] = "sandbox"
    kind: Literal["file.edit"] = "file.edit"
    command: Literal["view", "create", "str_replace", "insert", "undo_edit"]
    path: str
    file_text: str | None = None
    old_str: str | None = None
    new_str: str | None = None
    insert_line: int | None = Field(default=None, ge=0)
    view_range: list[int] | None = None


class McpCall(Action):
    """Call a tool of one of the session's MCP servers."""

    handled_by: ClassVar[Service | None] = "mcp"
    kind: Literal["mcp.call"] = "mcp.call"
    server: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Think(Action):
    """A thought the agent logs; nothing runs."""

    kind: Literal["think"] = "think"


class Finish(Action):
    """The agent declares the task done."""

    kind: Literal["finish"] = "finish"
    message: str = ""


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (
    Run,
    FileRead,
    FileWrite,
    FileEdit,
    McpCall,
    Think,
    Finish,
)
