"""ReplayGateway: the model gateway of a replay. The Nth model call is answered with the
Nth recorded response; no model is ever called.

Each request is prepared by a real ``LlmGateway`` (masking, hashing, fingerprint: the very
code that recorded the session), so its fingerprint is comparable with the recorded one.
*strict*: a fingerprint that differs stops the replay with a ``request`` divergence.
*positional*: the recorded response is served anyway and the difference reported. A call the
recording does not have stops either way (``extra_call``), and so does a recorded call with a
redacted part or a prompt message redacted (``redacted``: ``redactions.py``). Before each
request, what the previous served calls led to is compared with the recording (``action``).

The served ``llm.call`` carries the recorded response, usage and cost (the controller's cost
limit counts it as the recording did) and ``replayed_from`` = the recorded call's seq; its
prompt is the replay's own. A call that failed for good in the recording fails the same way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol
from uuid import UUID

from app.events import LlmCall
from app.llm import LlmConfig, LlmError, LlmGateway, LlmReply
from app.llm.call_log import CallLog
from app.llm.errors import FailureKind
from app.llm.gateway import PreparedRequest
from app.llm.retry import Failure
from app.replay.divergence import ExtraCall, RequestDivergence, redacted
from app.replay.progress import ReplayDiverged, ReplayProgress
from app.replay.requests import ModelRequest, compare_requests
from app.store import RecordedEvent


class ReplayLog(CallLog, Protocol):
    """The log a replay records its calls in and reads the recorded prompts from: the store,
    or the replay's own buffered log (``AnsweringLog``)."""

    async def read_messages(self, hashes: Sequence[str]) -> dict[str, Any]: ...


class ReplayGateway:
    def __init__(self, store: ReplayLog, config: LlmConfig, progress: ReplayProgress) -> None:
        #: prepares requests only; its model-calling path is never used
        self._requests = LlmGateway(store, config.model_copy(update={"api_key": None}))
        self.store = store
        self.config = config
        self.progress = progress
        #: calls made to a model: there is no path to one, so this stays 0
        self.model_calls = 0

    async def complete(
        self,
        session_id: UUID,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        cause: int | None = None,
        on_retry: Callable[[Failure, float], Awaitable[None]] | None = None,
        record: bool = True,
        previous: Mapping[str, Any] | None = None,
    ) -> LlmReply:
        """The recorded reply to the next call (see the module); ``ReplayDiverged`` when the
        replay must stop, ``LlmError`` when the recorded call failed for good."""
        progress = self.progress
        if progress.divergence is not None:  # an action worker stopped the replay
            raise ReplayDiverged(progress.divergence)
        await progress.sync()
        await progress.check_consequences()
        step = progress.served + 1
        if progress.served >= len(progress.recording.call_seqs):
            raise progress.stop(
                ExtraCall(
                    step=step,
                    summary=f"model call {step}: the agent asked the model again, but the "
                    f"recording has only {len(progress.recording.call_seqs)} model calls",
                )
            )
        progress.recording.serving(progress.served)
        recorded = await progress.recording.call(progress.served)
        missing = progress.recording.redacted.of_call(recorded.seq)
        if missing:  # either mode: its answer or its request is not all there
            raise progress.stop(
                redacted(step, recorded.seq, missing, f"model call {step} cannot be served")
            )
        request = self._requests.prepare(messages, tools, previous)
        if request.fingerprint != recorded.payload.get("fingerprint"):
            difference = await self._difference(step, recorded, request)
            if progress.mode == "strict":
                raise progress.stop(difference)
            progress.report(difference)
        await self._requests.store_prompt(request)
        progress.served += 1
        call = served_call(recorded, request, self.config.model, cause=cause)
        if call.error and call.error_kind != "bad_response":
            await self.store.append(session_id, [call])  # a failed call is always recorded
            kind: FailureKind = call.error_kind or "unavailable"  # type: ignore[assignment]
            raise LlmError(kind, call.error, attempts=call.attempts)
        event = (await self.store.append(session_id, [call]))[0] if record else None
        response = call.response
        return LlmReply(
            call=call,
            event=event,
            content=None if call.error else response.content,
            tool_calls=[] if call.error else list(response.tool_calls),
            finish_reason=response.finish_reason,
            error=call.error,
        )

    async def _difference(
        self, step: int, recorded: RecordedEvent, request: PreparedRequest
    ) -> RequestDivergence:
        """What differs between the recorded request (its stored messages) and this one."""
        payload = recorded.payload
        prompt = await self.progress.recording.prompt_of(recorded.seq)
        tools_hash = payload.get("tools")
        stored = await self.store.read_messages([*prompt, *([tools_hash] if tools_hash else [])])
        recorded_params = dict(payload.get("params") or {})
        recorded_params.pop("base_url", None)
        old = ModelRequest(
            model=str(payload.get("model", "")),
            params=recorded_params,
            messages=[stored[key] for key in prompt if key in stored],
            tools=list((stored.get(tools_hash) or {}).get("tools", [])) if tools_hash else [],
            fingerprint=str(payload.get("fingerprint", "")),
        )
        new = ModelRequest(
            model=self.config.model,
            params=request.params,
            messages=request.messages,
            tools=request.tools,
            fingerprint=request.fingerprint,
        )
        difference = compare_requests(step, recorded.seq, old, new)
        assert difference is not None  # the fingerprints differ
        return difference


def served_call(
    recorded: RecordedEvent,
    request: PreparedRequest,
    model: str,
    *,
    cause: int | None = None,
    streamed: bool = False,
) -> LlmCall:
    """The llm.call a replay records for a served call: the replay's request, the
    recording's answer (``replayed_from`` its seq). Chronicle's replay and the gateway's
    replay of an outside agent (``app/external/replay_serving.py``) both record this one."""
    payload = recorded.payload
    params: dict[str, Any] = {
        **request.params,
        "base_url": (payload.get("params") or {}).get("base_url"),
    }
    if streamed:
        params["stream"] = True
    # One validation of the whole event (its response and usage inside it), not one per
    # part: a replay makes one of these a step.
    return LlmCall.model_validate(
        {
            "model": model,
            "params": params,
            "fingerprint": request.fingerprint,
            "prompt": request.recorded_prompt(),
            "prompt_kept": request.kept,
            "tools": request.tools_hash,
            "tool_calling": payload.get("tool_calling", "native"),
            "response": payload.get("response") or {},
            "usage": payload.get("usage") or {},
            "cost_usd": payload.get("cost_usd"),
            "latency_ms": 0.0,
            # a refusal (limits, divergence) was recorded with 0 attempts: kept so
            "attempts": payload.get("attempts", 1),
            "error": payload.get("error"),
            "error_kind": payload.get("error_kind"),
            "cause": cause,
            "replayed_from": recorded.seq,
        }
    )
