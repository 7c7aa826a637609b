"""A session's services around its controller: the action workers run beside it.

The executor and the MCP tool service answer the session's actions as action workers
(app/store/action_worker.py). A worker runs until cancelled; one that stops on its own (its
sandbox died past the restart budget, or the log refuses its answers) would leave the
controller waiting for answers that never come, so the run ends at once in ``error``,
recorded as an ``agent.state`` that says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any
from uuid import UUID

from app.agent.controller import AgentController, Outcome
from app.agent.tools import mcp_tool_name, mcp_tool_schema
from app.config import Settings
from app.events import AgentState
from app.store import EventStore
from app.tools.mcp import McpTool

log = logging.getLogger(__name__)


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


def _why_stopped(name: str, task: asyncio.Task[Any]) -> str:
    problem = task.exception() if not task.cancelled() else None
    if problem is None:
        return f"the {name} stopped"
    return str(problem) or f"the {name} failed ({type(problem).__name__})"


async def drive(
    store: EventStore,
    session_id: UUID,
    controller: AgentController,
    workers: Mapping[str, Coroutine[Any, Any, Any]],
) -> Outcome:
    """Run the controller with ``workers`` (by name) beside it until it returns an outcome;
    ``"error"`` as soon as a worker stops. The workers are cancelled either way."""
    tasks = {
        asyncio.create_task(worker, name=f"chronicle-{name}"): name
        for name, worker in workers.items()
    }
    control = asyncio.create_task(controller.run(), name="chronicle-controller")
    try:
        done, _ = await asyncio.wait({control, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        if control in done:
            return control.result()
        stopped = next(task for task in tasks if task in done)
        reason = _why_stopped(tasks[stopped], stopped)
        log.error("session %s: %s; the run ends", session_id, reason)
        control.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await control
        await store.append(session_id, [AgentState(state="error", reason=reason, source="agent")])
        return "error"
    finally:
        for task in (control, *tasks):
            task.cancel()
        await asyncio.gather(control, *tasks, return_exceptions=True)
