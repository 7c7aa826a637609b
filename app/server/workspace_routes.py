"""A session's recorded workspace: ``GET /api/sessions/{id}/workspace``, the files at the end
marked added, modified, deleted or unchanged, each with its part of the diff against the
start, and the noise counted (app/sessions/workspace_view.py)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from litestar import Request, get
from litestar.params import FromPath

from app.server.access import ensure_visible
from app.server.auth import principal_of
from app.server.context import Context
from app.server.problems import problem_responses
from app.sessions.workspace_view import WorkspaceView, read_workspace


@get("/api/sessions/{session_id:uuid}/workspace", responses=problem_responses(404))
async def workspace(
    request: Request[Any, Any, Any], ctx: Context, session_id: FromPath[UUID]
) -> WorkspaceView:
    """The session's workspace at the end of its last run, against its recorded start."""
    await ensure_visible(ctx, principal_of(request), session_id)
    return await read_workspace(ctx.store, session_id, ctx.settings.workspace_diff_leave_out)


ROUTES = [workspace]
