"""A session's services around its controller: the MCP tools it offers, where their logs go,
and ``drive`` (from ``app.agent.driving``: the controller with the action workers beside it;
a replay drives the same way with workers that answer from the recording).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

from app.agent.driving import drive
from app.agent.tools import mcp_tool_name, mcp_tool_schema
from app.config import Settings
from app.tools.mcp import McpTool

__all__ = ["agent_mcp_tools", "drive", "mcp_log_dir"]


def mcp_log_dir(settings: Settings, session_id: UUID) -> Path:
    """Where the session's MCP servers write their stderr."""
    return settings.data_dir / "logs" / str(session_id)


def agent_mcp_tools(
    tools: list[McpTool],
) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]]]:
    """The MCP tools as the agent offers them to the model (function schemas), and the
    model-facing names mapped to (server, tool)."""
    schemas = [mcp_tool_schema(t.server, t.name, t.description, t.input_schema) for t in tools]
    index = {mcp_tool_name(t.server, t.name): (t.server, t.name) for t in tools}
    return schemas, index
