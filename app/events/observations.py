"""Observations: the environment's answers, each with ``cause`` = the action's seq."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from app.events.base import Event, Observation


class RunOutput(Observation):
    """What a command printed (stdout and stderr merged, in order) and how it ended.

    ``exit_code`` is None while ``still_running``: the command printed nothing for a while and
    keeps running; the next ``Run`` with ``is_input=True`` sends it input (or ``C-c``).
    """

    kind: Literal["run.output"] = "run.output"
    output: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False
    still_running: bool = False


class FileReadOutput(Observation):
    kind: Literal["file.read.output"] = "file.read.output"
    path: str
    content: str


class FileWriteOutput(Observation):
    kind: Literal["file.write.output"] = "file.write.output"
    path: str
    diff: str = ""


class FileEditOutput(Observation):
    kind: Literal["file.edit.output"] = "file.edit.output"
    path: str
    diff: str = ""
    content: str = ""


class McpResult(Observation):
    """An MCP tool's answer: its content blocks as MCP writes them (``text``; ``image`` and
    ``audio`` with base64 ``data`` and ``mimeType``; resources), its ``structuredContent``
    when it sent one, and whether the tool reported an error. Long text is cut like command
    output (``truncated``)."""

    kind: Literal["mcp.result"] = "mcp.result"
    content: list[dict[str, Any]] = Field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False
    truncated: bool = False


class ErrorObservation(Observation):
    """An action could not be carried out (or was interrupted); the agent sees ``message``."""

    kind: Literal["error"] = "error"
    message: str
    error_type: str = ""
    #: For a tool call the agent could not turn into an action (unknown tool, bad JSON, ...).
    tool_call_id: str | None = None


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (
    RunOutput,
    FileReadOutput,
    FileWriteOutput,
    FileEditOutput,
    McpResult,
    ErrorObservation,
)


def answer_failure(kind: str, payload: dict[str, Any]) -> tuple[str, str] | None:
    """How an action's answer says the action failed, as ``(type, message)``; None when it
    did not. One definition for every reader that asks: the search's "errors", the OTLP
    spans' status and ``error.type``; the analytics views' ``failed`` column says the same in
    SQL (an ``error`` observation, a time-out, an MCP error, a non-zero exit code)."""
    if kind == "error":
        return str(payload.get("error_type") or "_OTHER"), str(payload.get("message") or "")
    if payload.get("timed_out") is True:
        return "timeout", "the command timed out"
    if payload.get("is_error") is True:
        return "tool_error", "the tool answered with an error"
    code = payload.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        return "exit_code", f"exited {code}"
    return None
