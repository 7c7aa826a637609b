"""A new session's run configuration: what its ``session.created`` event records.

One function for both ways a session starts, ``chronicle run`` (``runner``) and the API's
``POST /api/sessions`` (``app.server.creation``), so a session reads the same whoever made
it, and ``resume`` (which takes everything from this record) runs it the same way. Never a
secret: the model's settings as ``LlmConfig.public()`` shows them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from app.agent.codeact import CodeActAgent
from app.events.session_config import SessionConfig
from app.llm import LlmConfig
from app.runtime.kinds import KINDS
from app.tools.config import McpServerConfig

#: What a session runs when nothing says otherwise.
DEFAULT_MAX_ITERATIONS = 100


def run_config(
    *,
    agent: type[CodeActAgent],
    workspace: Path,
    runtime: str,
    sandbox_base_image: str,
    llm: LlmConfig,
    mcp_servers: Sequence[McpServerConfig],
    mcp_tool_names: Sequence[str] = (),
    max_iterations: int | None,
    max_cost_usd: float | None,
    stuck_detection: bool,
    extra: Mapping[str, Any] | None = None,
) -> SessionConfig:
    """The configuration ``session.created`` records. ``mcp_tool_names``: the tools of MCP
    servers already started (the API starts none: a run lists them when it starts);
    ``extra``: what an evaluation run adds (see ``SessionOptions.evaluation``)."""
    kind = KINDS.get(runtime)
    return SessionConfig.model_validate(
        {
            "agent": agent.name,
            "workspace": str(workspace),
            "runtime": runtime,
            "image": kind.recorded_image(sandbox_base_image) if kind else None,
            "model": llm.model,
            "base_url": llm.base_url,
            "llm": llm.public(),
            "tools": agent.builtin_tool_names() + list(mcp_tool_names),
            "mcp_servers": [server.public() for server in mcp_servers],
            "max_iterations": max_iterations or DEFAULT_MAX_ITERATIONS,
            "max_cost_usd": max_cost_usd,
            "stuck_detection": stuck_detection,
            **(extra or {}),
        }
    )
