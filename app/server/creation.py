"""Creating a session through the API: check, record, ask for a run — never run it here.

The API records what ``chronicle run`` records first (``session.created`` with the
configuration, the user's task as a ``message``, the workspace's ``workspace.snapshot``), each
event a user sent carrying the user's name, then asks a worker to run the session
(``app.sessions.leases.request_run``), which resumes it from the log.

The workspace is a fresh directory under the data directory unless the request names one;
a named one must be an existing directory inside one of the configured ``workspace_roots``
(after resolving symbolic links, so a link cannot lead out of them). Anything else is refused:
the API must not hand an agent any directory of the server's machine.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

from litestar import Request, post
from litestar.params import JSONBody
from pydantic import BaseModel, Field

from app.agent.codeact import CodeActAgent
from app.config import Settings
from app.events import Event, Message, SessionCreated
from app.events.session_config import SessionConfig
from app.llm.errors import LlmNotConfiguredError, model_name_problem
from app.runtime.kinds import RuntimeKind
from app.server.auth import principal_of
from app.server.context import Context
from app.server.problems import TooManyActiveSessions, Unprocessable, problem_responses
from app.server.text_fields import MESSAGE_TEXT
from app.sessions.leases import request_run
from app.sessions.run_config import run_config
from app.sessions.sql.session_owners import reserve_session
from app.sessions.sql.users import Principal
from app.sessions.summary import one_line_title
from app.sessions.workspace import fresh_workspace_start, record_workspace_start
from app.store import EventStore


class SessionLimits(BaseModel):
    max_iterations: int | None = Field(default=None, ge=1, le=10_000)
    max_cost_usd: float | None = Field(default=None, ge=0)


class NewSession(BaseModel):
    """What a client may choose about a new session; the rest comes from the settings."""

    task: Annotated[str, MESSAGE_TEXT] = MESSAGE_TEXT.field(description="what the agent should do")
    model: str | None = Field(default=None, max_length=200, description="litellm model name")
    runtime: RuntimeKind | None = None
    limits: SessionLimits = Field(default_factory=SessionLimits)
    workspace: str | None = Field(
        default=None,
        max_length=4096,
        description="an existing directory under a configured workspace root; default: a "
        "fresh directory",
    )
    stuck_detection: bool = True


class CreatedSession(BaseModel):
    id: UUID
    title: str
    workspace: str
    runtime: str
    model: str
    max_iterations: int
    max_cost_usd: float | None
    user: str


def fresh_workspace(settings: Settings, session_id: UUID) -> Path:
    return settings.data_dir / "workspaces" / str(session_id)


def allowed_workspace(requested: str, roots: list[Path]) -> Path:
    """The real path of ``requested`` if it is a directory inside a root; else a refusal."""
    if not roots:
        raise Unprocessable(
            "this server takes no existing workspace (no workspace_roots are configured); "
            "leave workspace out for a fresh one"
        )
    path = Path(requested)
    if not path.is_absolute():
        raise Unprocessable(f"the workspace {requested!r} must be an absolute path")
    real = Path(os.path.realpath(path))
    for root in roots:
        real_root = Path(os.path.realpath(root))
        if real == real_root or real.is_relative_to(real_root):
            if not real.is_dir():
                raise Unprocessable(f"the workspace {requested} is not an existing directory")
            return real
    raise Unprocessable(
        f"the workspace {requested} is outside the configured workspace roots; use a "
        "directory under one of them, or none for a fresh one"
    )


def session_config(
    settings: Settings, new: NewSession, workspace: Path
) -> tuple[SessionConfig, str]:
    """``session.created``'s configuration (as ``chronicle run`` records it) and the model."""
    try:
        llm = settings.llm.config(model=new.model)
    except LlmNotConfiguredError:
        raise Unprocessable(
            "no model: name one in the request's model, or configure llm_model on the server"
        ) from None
    config = run_config(
        agent=CodeActAgent,
        workspace=workspace,
        runtime=new.runtime or settings.sandbox.kind,
        sandbox_base_image=settings.sandbox.docker.base_image,
        llm=llm,
        mcp_servers=settings.mcp_servers,
        max_iterations=new.limits.max_iterations,
        max_cost_usd=new.limits.max_cost_usd,
        stuck_detection=new.stuck_detection,
    )
    return config, llm.model


async def refuse_unknown_provider(model: str | None) -> None:
    """422 for a model the request names that no provider answers to (every call of the
    session would fail), before anything is recorded: a new session's and an evaluation
    run's alike. The server's own model is the operator's: a request that names none is not
    held up by importing litellm (seconds, the first time) to check it."""
    if model is None:
        return
    problem = await asyncio.to_thread(model_name_problem, model)
    if problem is not None:
        raise Unprocessable(problem)


async def reserve_within_cap(
    store: EventStore, settings: Settings, principal: Principal, session_id: UUID
) -> None:
    """Make the user the new session's owner, within their cap of working sessions (every
    route that starts a session: a new one, a replay, a fork)."""
    cap = settings.server.max_active_sessions
    if await reserve_session(store, session_id, principal.user_id, cap) >= cap:
        raise TooManyActiveSessions(
            f"you have {cap} sessions working already (the most one user may have); wait "
            "until one ends, or stop one",
            headers={"Retry-After": "30"},
        )


async def create_session(
    store: EventStore, settings: Settings, principal: Principal, new: NewSession, session_id: UUID
) -> CreatedSession:
    """Check the user's cap and the workspace, record the session, ask for its run."""
    if new.workspace is None:
        workspace = fresh_workspace(settings, session_id)
    else:
        workspace = await asyncio.to_thread(
            allowed_workspace, new.workspace, list(settings.server.workspace_roots)
        )
    config, model = session_config(settings, new, workspace)
    await refuse_unknown_provider(new.model)
    await reserve_within_cap(store, settings, principal, session_id)
    if new.workspace is None:  # made only once the session is sure to be recorded
        await asyncio.to_thread(workspace.mkdir, parents=True, exist_ok=True)
    title = one_line_title(new.task)
    events: list[Event] = [
        SessionCreated(title=title, config=config, user=principal.name),
        Message(content=new.task, source="user", user=principal.name),
    ]
    if new.workspace is None:  # the directory made above, empty: its start needs no git
        events.append(fresh_workspace_start(settings))
    await store.append(session_id, events, expected_seq=0)
    if new.workspace is not None:
        # the worker reads the start back from the log: no baseline kept here
        await record_workspace_start(store, session_id, workspace, settings, keep_baseline=False)
    await request_run(store, session_id, reason="created")
    return CreatedSession(
        id=session_id,
        title=title,
        workspace=str(workspace),
        runtime=str(config.runtime),
        model=model,
        max_iterations=config.max_iterations,
        max_cost_usd=config.max_cost_usd,
        user=principal.name,
    )


@post("/api/sessions", status_code=201, responses=problem_responses(409, 422))
async def create(
    request: Request[Any, Any, Any], ctx: Context, data: JSONBody[NewSession]
) -> CreatedSession:
    """Record a new session (its configuration and task) and ask a worker to run it."""
    return await create_session(ctx.store, ctx.settings, principal_of(request), data, uuid.uuid4())


ROUTES = [create]
