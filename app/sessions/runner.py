"""Running a session headless: sandbox, executor and controller around one session id.

A new session starts with ``session.created`` (its configuration, never a secret) and the
user's task; ``resume`` finds the configuration in that first event and carries on from the
log alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import uuid
from pathlib import Path
from typing import Any
from uuid import UUID

from pydantic import BaseModel, SecretStr, ValidationError

from app.agent.codeact import CodeActAgent
from app.agent.controller import AgentController, Limits, Outcome
from app.agent.driving import drive
from app.agent.registry import UnknownAgent, agent_class
from app.agent.steering import idle_answer, idle_outcome
from app.agent.stuck import StuckConfig
from app.agent.tools import mcp_tool_name
from app.config import Settings
from app.errors import ChronicleError
from app.events import AgentState, ErrorObservation, Message, SessionCreated
from app.events.masking import MASKED, SecretMasker
from app.events.session_config import SessionConfig
from app.llm import LlmConfig, LlmGateway
from app.replay.agent_config import AgentConfig
from app.runtime.executor import Executor
from app.runtime.factory import make_runtime
from app.runtime.kinds import KINDS, workspace_inside
from app.runtime.lifecycle import start_sandbox
from app.sessions.run_config import DEFAULT_MAX_ITERATIONS, run_config
from app.sessions.services import agent_mcp_tools, mcp_log_dir
from app.sessions.sql.steering_marks import steering_marks
from app.sessions.step_gate import BeforeModelCall, GatedGateway
from app.sessions.summary import one_line_title
from app.sessions.workspace import (
    record_workspace_end,
    record_workspace_start,
    workspace_baseline,
)
from app.store import (
    TRANSIENT_ERRORS,
    ActionWorker,
    ConcurrencyError,
    EventStore,
    SessionBusyError,
    StoreError,
    claim_session,
)
from app.tools.config import McpServerConfig
from app.tools.mcp import McpTool, McpToolService


class SessionOptions(BaseModel):
    """What ``chronicle run`` / ``resume`` may set; None means 'from the settings' (or, on
    resume, 'as recorded')."""

    workspace: Path | None = None
    runtime: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    max_iterations: int | None = None
    max_cost_usd: float | None = None
    stuck_detection: bool = True
    #: the registered agent to run (``app.agent.registry``); None: as recorded, else codeact
    agent: str | None = None
    mcp_servers: list[McpServerConfig] | None = None
    #: a resume by the user continues a session the user paused or stopped; a worker's run
    #: (``app.sessions.worker``) leaves the user's steering as it is
    continue_paused: bool = True
    #: what an evaluation run records about the session in ``session.created``'s config
    #: (``evaluation_run``, the task, the epoch: app/evaluation/scoring.py)
    evaluation: dict[str, Any] | None = None


class SessionError(ChronicleError):
    """The session cannot run; the message says why and what to do."""


class RunningElsewhereError(SessionError):
    """Another process runs the session right now (it holds the session's claim)."""


class DatabaseGoneError(SessionError):
    """The database went away while the session ran: its claim is lost, so the run stops
    (what was recorded stays; ``resume`` continues once the database is back)."""


#: The cancellation message of a run whose database went away.
DATABASE_GONE = "the database went away"


def recorded_config(events: list[Any]) -> SessionConfig:
    """The configuration a session was created with; the platform's audit log (a stream of
    the same table, app/events/platform_audit.py) is refused: it is no session to resume,
    fork or run."""
    for event in events:
        if event.kind == "session.created":
            try:
                config = SessionConfig.of_payload(event.payload)
            except ValidationError as exc:
                raise SessionError(f"the session's recorded config cannot be used: {exc}") from None
            if config.platform_log is True:
                raise SessionError(
                    "this is the platform's audit log, not a session: read it with "
                    "`chronicle audit log`; it cannot be resumed, forked or run"
                )
            return config
    raise SessionError(
        "this session has no session.created event; it was not started by `chronicle run`"
    )


def _recorded_base_url(
    recorded: str | None, configured: str | None, masker: SecretMasker
) -> str | None:
    """The model URL a resume calls: as recorded, unless the log's door masked credentials in
    it; then the configured URL it was recorded from, and one given for a single run must be
    given again (the log never holds the credentials)."""
    if not recorded or MASKED not in recorded:
        return recorded
    if configured and masker.mask_text(configured) == recorded:
        return configured
    raise SessionError(
        f"this session's model URL was recorded with its credentials masked ({recorded}); "
        "pass --base-url with the credentials to resume it"
    )


def _agent_overrides(recorded: SessionConfig) -> AgentConfig:
    """The agent changes the session recorded in ``agent_config`` (a fork made by
    ``chronicle replay --on-divergence fork`` runs live with the replay's system prompt,
    tools and model parameters); none for a session that recorded none."""
    try:
        overrides = AgentConfig.model_validate(recorded.agent_config or {})
        overrides.llm_overrides()
    except (ValidationError, ValueError) as exc:
        raise SessionError(f"the session's recorded agent_config cannot be used: {exc}") from None
    return overrides


def _agent_type(options: SessionOptions, recorded: SessionConfig) -> type[CodeActAgent]:
    """The agent class to run: the one asked for, else the one the session recorded (a
    fork's ``agent_config`` first: it is what the fork was made to run), else CodeAct; a
    resumed session keeps its agent, so its log stays one agent's."""
    as_recorded = (recorded.agent_config or {}).get("agent") or recorded.agent
    name = options.agent or as_recorded or CodeActAgent.name
    if as_recorded and name != as_recorded:
        raise SessionError(
            f"this session was recorded with the agent {as_recorded!r}, so it continues with "
            f"it; to go on with {name!r}, fork it: chronicle fork SESSION --at SEQ --agent {name}"
        )
    try:
        return agent_class(name)
    except UnknownAgent as exc:
        raise SessionError(str(exc)) from None


async def run_session(
    store: EventStore,
    settings: Settings,
    options: SessionOptions,
    *,
    task: str | None = None,
    session_id: UUID | None = None,
    before_model_call: BeforeModelCall | None = None,
) -> tuple[UUID, Outcome]:
    """Start (with ``task``) or resume a session and drive it until it ends or needs the user.

    ``before_model_call`` is awaited before each model call (a worker's drain gate:
    ``app.sessions.step_gate``).

    The session is claimed for the run (``store.session_claims``: a second process is refused,
    and a reader knows it runs). Cancelling the run (``task.cancel("interrupted by SIGINT")``)
    records an ``agent.state`` ``stopped`` with that message before the cancellation goes on;
    a database that goes away mid-run raises ``DatabaseGoneError``.
    """
    session_id = session_id or uuid.uuid4()
    this = asyncio.current_task()
    assert this is not None
    lost = threading.Event()

    def database_gone() -> None:
        lost.set()
        this.cancel(DATABASE_GONE)

    try:
        async with claim_session(store, session_id, on_lost=database_gone):
            try:
                return await _run_claimed(
                    store, settings, options, task, session_id, before_model_call
                )
            except asyncio.CancelledError as exc:
                if not lost.is_set():
                    await _record_stop(store, session_id, exc)
                raise
    except SessionBusyError as exc:
        raise RunningElsewhereError(str(exc)) from None
    except asyncio.CancelledError:
        if not lost.is_set():
            raise
        this.uncancel()
        raise DatabaseGoneError(f"{DATABASE_GONE} while session {session_id} ran") from None


async def _record_stop(store: EventStore, session_id: UUID, cancelled: BaseException) -> None:
    """Say in the log why a running session stopped (the cancellation's message)."""
    reason = cancelled.args[0] if cancelled.args and isinstance(cancelled.args[0], str) else ""
    with contextlib.suppress(StoreError, *TRANSIENT_ERRORS):
        async with asyncio.timeout(10):
            if await store.last_seq(session_id) > 0:
                stopped = AgentState(state="stopped", reason=reason or "interrupted")
                await store.append(session_id, [stopped])


def _import_litellm_in_background() -> None:
    """litellm takes seconds to import: import it while the sandbox starts (the gateway
    imports it lazily and finds it loaded, or waits for this import to finish)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price fetch at import
    threading.Thread(
        target=__import__, args=("litellm",), name="chronicle-import-litellm", daemon=True
    ).start()


async def _run_claimed(
    store: EventStore,
    settings: Settings,
    options: SessionOptions,
    task: str | None,
    session_id: UUID,
    before_model_call: BeforeModelCall | None = None,
) -> tuple[UUID, Outcome]:
    existing = await store.read(session_id, limit=5)
    recorded = recorded_config(existing) if existing else SessionConfig()
    workspace = options.workspace or (Path(recorded.workspace) if recorded.workspace else None)
    if workspace is None:
        raise SessionError("no workspace: pass --workspace DIR")
    workspace = Path(os.path.abspath(workspace))  # noqa: ASYNC240 - no I/O beyond getcwd
    runtime_kind = options.runtime or recorded.runtime or settings.sandbox.kind
    overrides = _agent_overrides(recorded)
    agent_type = _agent_type(options, recorded)
    llm = settings.llm.config(
        model=options.model or recorded.model,
        base_url=options.base_url
        or _recorded_base_url(recorded.base_url, settings.llm.base_url, store.masker),
        api_key=options.api_key,
        **overrides.llm_overrides(),
    )
    limits = Limits(
        max_iterations=options.max_iterations or recorded.max_iterations or DEFAULT_MAX_ITERATIONS,
        max_cost_usd=options.max_cost_usd
        if options.max_cost_usd is not None
        else recorded.max_cost_usd,
    )
    if not existing and not task:
        raise SessionError(f"session {session_id} does not exist; give a task to start it")
    if existing:
        await _record_resume(store, session_id, options, task)
        idle = await _idle_run(store, session_id, options)
        if idle is not None:
            return session_id, idle
    mcp_configs = options.mcp_servers if options.mcp_servers is not None else settings.mcp_servers
    tools = McpToolService(mcp_configs, log_dir=mcp_log_dir(settings, session_id))
    mcp_tools = await tools.start()
    if not existing:
        assert task is not None
        config = run_config(
            agent=agent_type,
            workspace=workspace,
            runtime=runtime_kind,
            sandbox_base_image=settings.sandbox.docker.base_image,
            llm=llm,
            mcp_servers=mcp_configs,
            mcp_tool_names=[mcp_tool_name(t.server, t.name) for t in mcp_tools],
            max_iterations=limits.max_iterations,
            max_cost_usd=limits.max_cost_usd,
            stuck_detection=options.stuck_detection,
            extra=options.evaluation,
        )
        await store.append(
            session_id,
            [
                SessionCreated(title=one_line_title(task), config=config),
                Message(content=task, source="user"),
            ],
            expected_seq=0,
        )
        if runtime_kind in KINDS:  # its sandbox would create it empty
            await asyncio.to_thread(workspace.mkdir, parents=True, exist_ok=True)
        baseline = await record_workspace_start(store, session_id, workspace, settings)
    else:
        baseline = await workspace_baseline(store, session_id, workspace, settings)
    reason = "error"
    try:
        result = await _run_with_baseline(
            store, settings, session_id, workspace, runtime_kind, llm, limits, options, tools,
            mcp_tools, overrides, agent_type, before_model_call,
        )  # fmt: skip
        reason = result[1]
        return result
    except asyncio.CancelledError:
        reason = "interrupted"
        raise
    finally:
        await record_workspace_end(store, session_id, baseline, settings, reason=reason)


async def _record_resume(
    store: EventStore, session_id: UUID, options: SessionOptions, task: str | None
) -> None:
    """What resuming an existing session records first: the user's ``running`` over their
    pause or stop (unless the run leaves steering as it is), and the new message."""
    marks = await steering_marks(store, session_id)
    paused = marks.request is not None and marks.request.state in ("paused", "stopped")
    if paused and options.continue_paused:
        await store.append(session_id, [AgentState(state="running", source="user")])
    if task:
        await store.append(session_id, [Message(content=task, source="user")])


async def _idle_run(store: EventStore, session_id: UUID, options: SessionOptions) -> Outcome | None:
    """How the run ends at once, with no sandbox started and no workspace diff, when the log
    asks nothing of it (``app.agent.steering``): the agent ended and the user sent nothing
    since, e.g. a second run requested by a message its first run already read. A pause or
    stop the agent was not there to answer is answered here, as its controller would."""
    marks = await steering_marks(store, session_id)
    answer = idle_answer(marks)
    if answer is not None:
        state, reason = answer
        try:
            await store.append(
                session_id,
                [AgentState(state=state, reason=reason, source="agent")],
                expected_seq=marks.last_seq,
            )
        except ConcurrencyError:
            return None  # the user steered again meanwhile: the controller reads it all
        return state
    as_recorded = options.max_iterations is None and options.max_cost_usd is None
    return idle_outcome(marks, limits_as_recorded=as_recorded)


async def _run_with_baseline(
    store: EventStore,
    settings: Settings,
    session_id: UUID,
    workspace: Path,
    runtime_kind: str,
    llm: LlmConfig,
    limits: Limits,
    options: SessionOptions,
    tools: McpToolService,
    mcp_tools: list[McpTool],
    overrides: AgentConfig,
    agent_type: type[CodeActAgent] = CodeActAgent,
    before_model_call: BeforeModelCall | None = None,
) -> tuple[UUID, Outcome]:
    if tools.problems:
        await store.append(
            session_id,
            [ErrorObservation(message=problem, error_type="mcp") for problem in tools.problems],
        )
    try:
        runtime = make_runtime(settings.runtime_config(), workspace, session_id, runtime_kind)
    except ValueError as exc:
        await tools.close()
        raise SessionError(str(exc)) from None
    _import_litellm_in_background()
    # Shielded: a start cancelled half-way (a container being created in a thread) would leave
    # what it made behind; it finishes, and is closed, before the cancellation goes on.
    starting = asyncio.ensure_future(
        start_sandbox(store, session_id, runtime, ready_timeout=settings.sandbox.ready_timeout)
    )
    try:
        await asyncio.shield(starting)
    except BaseException:
        with contextlib.suppress(BaseException):
            await starting
        await tools.close()
        await runtime.close()
        raise
    mcp_schemas, mcp_index = agent_mcp_tools(mcp_tools)
    if overrides.tools is not None:
        mcp_schemas = [t for t in mcp_schemas if t["function"]["name"] in overrides.tools]
    try:
        gateway = LlmGateway(store, llm)
        agent = agent_type(
            gateway if before_model_call is None else GatedGateway(gateway, before_model_call),
            workspace_inside(runtime_kind, str(workspace)),
            mcp_tools=mcp_schemas,
            mcp_index=mcp_index,
            system_prompt=overrides.system_prompt,
            builtin_tools=overrides.tools,
        )
        controller = AgentController(
            store, session_id, agent, limits=limits,
            stuck=StuckConfig(enabled=options.stuck_detection), stop_when_paused=True,
        )  # fmt: skip
        outcome = await drive(
            store,
            session_id,
            controller,
            {
                "executor": Executor(store, session_id, runtime, settings.executor).run(),
                "MCP tool service": ActionWorker(store, session_id, tools).run(),
            },
        )
    finally:
        await tools.close()
        await runtime.close()
    return session_id, outcome
