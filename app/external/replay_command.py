"""``chronicle record --replay SESSION -- COMMAND``: run an agent's command again with the
gateway answering its model calls from a recording (``replay_serving``), and report how the
replay went as ``chronicle replay`` does.

The replay is a session of its own, recorded as ``chronicle record`` records any run (the
command line, the workspace, the exit code), whose ``session.created`` config names the
recording (``replay_of``), the mode and what to do on a divergence. The gateway serves and
records the calls; this side watches the replay's log (``stop``: the command is stopped when
the gateway refuses a request). The gateway appends a served call behind its answer
(``replay_appends``), so when the command has ended this side asks it to settle the replay
(every served call in the log, or the error that kept one out: then the replay fails) before
it records the command's end; then it judges the replay from the two logs alone, with
``chronicle replay``'s typed divergences:

- a served call whose request differs from the recorded one: a ``request`` divergence (the
  one that stopped a strict replay, or a difference a positional replay reported);
- the first call not served (refused, or gone live): ``redacted`` when the recorded call
  was redacted after it was recorded (``RecordedCalls.blocked``: the gateway stops there in
  either mode), else ``request``, or ``extra_call`` past the recording's last call;
- recorded calls left unasked when the command ended: ``missing_call``;
- else a command that ended otherwise than the recorded one (its state or exit code):
  ``outcome``; ``redacted`` when the recorded end was redacted and cannot be compared.

The result is appended as the replay session's ``replay.result`` and returned
(``replay_command``: the function ``eval`` builds on).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.config import Settings
from app.events import ReplayResultEvent
from app.events.prompts import whole_prompts
from app.events.session_config import ReplayOrigin
from app.external.agent_command import RecordError, run_forwarding_signals
from app.external.record import Recording, record
from app.external.replay_appends import SETTLED_PATH
from app.external.replay_recording import (
    RecordedCalls,
    load_recording,
    request_difference,
    stored_request,
)
from app.external.replay_serving import DIVERGED
from app.replay.divergence import (
    Divergence,
    ExtraCall,
    MissingCall,
    OutcomeDivergence,
    RedactedDivergence,
    RequestDivergence,
)
from app.replay.engine import ReplayMode, ReplayResult
from app.replay.report import describe
from app.sessions.sql.session_owners import owner_of
from app.sessions.sql.users import find_user
from app.store import EventStore, RecordedEvent

OnDivergence = Literal["stop", "live"]
#: What ``chronicle record --replay`` exits with when the replay diverged.
DIVERGED_EXIT = 3
#: Seconds the gateway may take to write the calls it served (a long replay, a slow database).
SETTLE_TIMEOUT = 300.0


class ReplayOutcome(BaseModel):
    """How a replayed command went: the replay's result (as ``chronicle replay``'s) and the
    command's own exit code; ``exit_code`` is what ``chronicle record --replay`` exits with."""

    model_config = ConfigDict(frozen=True)

    result: ReplayResult
    on_divergence: OnDivergence
    command_exit_code: int

    @property
    def exit_code(self) -> int:
        result = self.result
        if result.divergence is not None and self.on_divergence == "live":
            return self.command_exit_code  # a fork: the run went on live
        return 0 if result.matched else DIVERGED_EXIT

    def report(self) -> str:
        """What a person reads: one line when it matched, else the divergence and its diff."""
        result = self.result
        if result.matched:
            return (
                f"chronicle: replay {result.session_id} of {result.replay_of} "
                f"({result.mode}): {result.steps_served} model calls served, matched, "
                f"{result.model_calls} made, exit code {self.command_exit_code}"
            )
        text = describe(result)
        if isinstance(result.divergence, RedactedDivergence):
            # ``describe`` names ``chronicle replay``'s way to go on from before it; this
            # command's is --on-divergence live (from the refused call on)
            text = text.replace("--on-divergence fork", "--on-divergence live")
        if result.divergence is not None and self.on_divergence == "live":
            text += (
                f"\nwent on live from the divergence: {result.model_calls} model calls made, "
                f"exit code {self.command_exit_code}"
            )
        return text


async def replay_command(
    store: EventStore,
    settings: Settings,
    *,
    recording: UUID,
    command: Sequence[str],
    workspace: Path,
    gateway_url: str,
    user: str,
    mode: ReplayMode = "strict",
    on_divergence: OnDivergence = "stop",
    check_gateway: Callable[[str], Awaitable[None]],
    started: Callable[[UUID], None],
    owner_store: Callable[[], Awaitable[EventStore]] | None = None,
    config: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    run_command: CommandRunner = run_forwarding_signals,
) -> ReplayOutcome:
    """Replay ``recording`` by running ``command`` against the gateway at ``gateway_url``
    (see the module); ``RecordError`` when it cannot start (the recording is not an
    external session of ``user``'s, ...). ``check_gateway``, ``started`` and
    ``owner_store`` are ``app.external.record.record``'s; ``config``, ``environment`` and
    ``run_command`` (its ``runner``) are ``Recording``'s, for ``chronicle eval replay``."""
    begun = time.monotonic()
    recorded = await load_recording(store, recording)
    found = await find_user(store, user)
    if found is not None and await owner_of(store, recording) != found.id:
        raise RecordError(f"no session {recording} of yours to replay")
    run = Recording(
        command=list(command),
        workspace=workspace,
        gateway_url=gateway_url,
        user=user,
        config={
            **(config or {}),
            **ReplayOrigin(of=str(recording), mode=mode, on_divergence=on_divergence).stored(),
            "client": "chronicle record --replay",
        },
        environment=environment or {},
        runner=_runner(store, gateway_url, stop=on_divergence == "stop", run_command=run_command),
    )
    ran = await record(
        store,
        settings,
        run,
        check_gateway=check_gateway,
        started=started,
        owner_store=owner_store,
    )
    result = await judge(store, recorded, ran.session_id, mode, seconds=time.monotonic() - begun)
    await store.append(
        ran.session_id,
        [ReplayResultEvent.model_validate(result.model_dump(mode="json", exclude={"session_id"}))],
    )
    return ReplayOutcome(
        result=result, on_divergence=on_divergence, command_exit_code=ran.exit_code
    )


#: How a command runs (``Recording.runner``).
CommandRunner = Callable[[Sequence[str], Path, Mapping[str, str]], Coroutine[Any, Any, int]]


def _runner(
    store: EventStore,
    gateway_url: str,
    *,
    stop: bool,
    run_command: CommandRunner = run_forwarding_signals,
) -> CommandRunner:
    """How the command runs: with signals passed on, (``stop``) stopped with SIGTERM as soon
    as the gateway refuses one of its requests (a divergence), and done once the gateway
    has written every call it served (``settled_replay``): the same serving process as when
    the command started, or calls it answered might be missing (``RecordError``)."""

    async def run(command: Sequence[str], cwd: Path, environ: Mapping[str, str]) -> int:
        token = environ["OPENAI_API_KEY"]  # the command's (``gateway_environment``)
        serving = await settled_replay(gateway_url, token)
        returncode = await _run(command, cwd, environ)
        if await settled_replay(gateway_url, token) != serving:
            raise RecordError(
                "the gateway process that served this replay is not the one that started it "
                "(it restarted, or another one answered): calls it answered may be missing "
                "from the replay's log, so the replay failed; run it again"
            )
        return returncode

    async def _run(command: Sequence[str], cwd: Path, environ: Mapping[str, str]) -> int:
        running = asyncio.create_task(run_command(command, cwd, environ))
        if not stop:
            return await running
        watching = asyncio.create_task(_refused(store, UUID(environ["CHRONICLE_SESSION"])))
        try:
            await asyncio.wait({running, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
        if running.done():
            return running.result()
        running.cancel()  # ends the command with SIGTERM (``run_forwarding_signals``)
        with contextlib.suppress(asyncio.CancelledError):
            await running
        return -signal.SIGTERM

    return run


async def settled_replay(gateway_url: str, token: str) -> str:
    """Once the gateway at ``gateway_url`` has every call it served the replay of ``token``
    in the replay's log (``app.external.replay_appends``); which serving process says so.
    ``RecordError`` when it cannot say so: the replay failed."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=SETTLE_TIMEOUT) as client:
            answer = await client.post(
                f"{gateway_url.rstrip('/')}{SETTLED_PATH}",
                headers={"Authorization": f"Bearer {token}"},
            )
    except httpx.HTTPError as exc:
        raise RecordError(
            f"the gateway at {gateway_url} stopped answering ({exc!r}) before it said every "
            "call it served this replay is recorded; the replay failed: run it again"
        ) from None
    if answer.status_code == 404:
        raise RecordError(
            f"the Chronicle server at {gateway_url} cannot say when a replay's calls are "
            f"recorded ({SETTLED_PATH}); upgrade it"
        )
    if answer.status_code != 200:
        try:
            message = str(answer.json()["error"]["message"])
        except (ValueError, KeyError, TypeError):
            message = answer.text[:500]
        raise RecordError(f"the replay failed: {message}")
    return str(answer.json()["gateway"])


async def _refused(store: EventStore, session_id: UUID) -> None:
    """Until the gateway records a refused (diverged) request in the replay session."""
    async with store.subscribe(session_id) as events:
        async for event in events:
            if event.kind == "llm.call" and event.payload.get("error_kind") == DIVERGED:
                return


async def judge(
    store: EventStore,
    recording: RecordedCalls,
    replay_id: UUID,
    mode: ReplayMode,
    *,
    seconds: float,
) -> ReplayResult:
    """How the replay session ``replay_id`` of ``recording`` went, from its log (see the
    module)."""
    events = await store.read(replay_id)
    calls = [event for event in events if event.kind == "llm.call"]
    served = matched = live = 0
    differences: list[RequestDivergence] = []
    divergence: Divergence | None = None
    for call, prompt in zip(calls, whole_prompts(c.payload for c in calls), strict=True):
        origin = call.payload.get("replayed_from")
        if origin is not None:
            served += 1
            if call.payload.get("fingerprint") == recording.by_seq[origin].payload.get(
                "fingerprint"
            ):
                matched += 1
            else:
                differences.append(
                    await _difference(store, recording, served, origin, call, prompt)
                )
            continue
        if call.payload.get("error_kind") != DIVERGED:
            live += 1
        if divergence is None:
            divergence = await _first_unserved(store, recording, served, call, prompt)
    state, exit_code, reason = _ending(events)
    if divergence is None and served < len(recording.served):
        remaining = len(recording.served) - served
        divergence = MissingCall(
            step=served + 1,
            recorded_seq=recording.served[served].seq,
            remaining=remaining,
            outcome=state,
            summary=f"model call {served + 1}: the command ended ({state}: {reason}) where "
            f"the recording went on with {remaining} more model calls",
        )
    recorded_state, recorded_exit, recorded_reason = recording.outcome
    if divergence is None:
        divergence = recording.redacted_outcome(served)
    if (
        divergence is None
        and recorded_state is not None  # a recording of the gateway alone says no end
        and (state, exit_code) != (recorded_state, recorded_exit)
    ):
        divergence = OutcomeDivergence(
            step=served,
            recorded_state=recorded_state,
            recorded_reason=recorded_reason,
            new_state=state,
            new_reason=reason,
            summary=f"after model call {served}: the command ended {state} (exit code "
            f"{exit_code}) where the recording ended {recorded_state} (exit code "
            f"{recorded_exit})",
        )
    if mode == "strict" and divergence is None and differences:  # served differently: say so
        divergence, differences = differences[0], []
    return ReplayResult(
        session_id=replay_id,
        replay_of=recording.session_id,
        mode=mode,
        matched=divergence is None and not differences,
        outcome=state,
        recorded_outcome=recorded_state,
        steps_recorded=len(recording.served),
        steps_served=served,
        steps_matched=matched,
        divergence=divergence,
        differences=differences,
        model_calls=live,
        seconds=seconds,
    )


async def _difference(
    store: EventStore,
    recording: RecordedCalls,
    step: int,
    recorded_seq: int,
    call: RecordedEvent,
    prompt: list[str],
) -> RequestDivergence:
    new = await stored_request(store, call.payload, prompt)
    return await request_difference(store, recording, step, recorded_seq, new)


async def _first_unserved(
    store: EventStore,
    recording: RecordedCalls,
    served: int,
    call: RecordedEvent,
    prompt: list[str],
) -> Divergence:
    """The divergence a call the replay did not serve stands for (refused, or gone live)."""
    step = served + 1
    if served >= len(recording.served):
        return ExtraCall(
            step=step,
            summary=f"model call {step}: the agent asked the model again, but the recording "
            f"has only {len(recording.served)} model calls",
        )
    blocked = recording.blocked(step)
    if blocked is not None:  # never compared: what it would be compared with is gone
        return blocked
    return await _difference(store, recording, step, recording.served[served].seq, call, prompt)


def _ending(events: list[RecordedEvent]) -> tuple[str | None, int | None, str]:
    """The command's last ``agent.state``: its state, exit code and reason."""
    for event in reversed(events):
        if event.kind == "agent.state" and event.source == "agent":
            payload = event.payload
            return payload.get("state"), payload.get("exit_code"), str(payload.get("reason", ""))
    return None, None, ""
