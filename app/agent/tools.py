"""The tools a CodeAct agent offers the model, as OpenAI function schemas."""

from __future__ import annotations

from typing import Any

EXECUTE_BASH = {
    "type": "function",
    "function": {
        "name": "execute_bash",
        "description": (
            "Run a bash command in the workspace's persistent shell (cd, exported variables "
            "and virtualenvs persist). A command that prints nothing for a while returns early "
            "and keeps running: call again with is_input=true to send it input, an empty "
            "command to wait for more output, or C-c to interrupt it."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "the command, or input with is_input"},
                "is_input": {
                    "type": "boolean",
                    "description": "send the command as input to the running process",
                },
                "timeout": {
                    "type": "number",
                    "description": "hard limit in seconds; the command is killed after it",
                },
            },
            "required": ["command"],
        },
    },
}

STR_REPLACE_EDITOR = {
    "type": "function",
    "function": {
        "name": "str_replace_editor",
        "description": (
            "View, create and edit files. view shows a file with line numbers or a directory "
            "two levels deep; create makes a new file (never overwrites); str_replace replaces "
            "old_str, which must occur exactly once, with new_str; insert adds new_str after "
            "line insert_line; undo_edit reverts the last edit of the file."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "enum": ["view", "create", "str_replace", "insert", "undo_edit"],
                    "description": "what to do",
                },
                "path": {"type": "string", "description": "file or directory, in the workspace"},
                "file_text": {"type": "string", "description": "content for create"},
                "old_str": {"type": "string", "description": "exact text to replace"},
                "new_str": {"type": "string", "description": "replacement or inserted text"},
                "insert_line": {"type": "integer", "description": "insert after this line"},
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "description": "[first, last] lines to view; last -1 means to the end",
                },
            },
            "required": ["command", "path"],
        },
    },
}

THINK = {
    "type": "function",
    "function": {
        "name": "think",
        "description": "Write down a thought (planning, reasoning); nothing is run.",
        "parameters": {
            "type": "object",
            "properties": {"thought": {"type": "string", "description": "the thought"}},
            "required": ["thought"],
        },
    },
}

FINISH = {
    "type": "function",
    "function": {
        "name": "finish",
        "description": "Declare the task done, with a short summary for the user.",
        "parameters": {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "what was done"}},
            "required": ["message"],
        },
    },
}

BUILTIN_TOOLS: list[dict[str, Any]] = [EXECUTE_BASH, STR_REPLACE_EDITOR, THINK, FINISH]


def mcp_tool_name(server: str, tool: str) -> str:
    """How an MCP tool is named to the model: unique across servers."""
    return f"{server}__{tool}"


def mcp_tool_schema(
    server: str, tool: str, description: str, schema: dict[str, Any]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": mcp_tool_name(server, tool),
            "description": f"[{server}] {description}".strip(),
            "parameters": schema or {"type": "object", "properties": {}},
        },
    }
