"""The gateway's side of ``chronicle record --replay``: a replay session's model calls are
answered from its recording, and no model is called.

A replay session is an external session whose ``session.created`` config names ``replay_of``
(the recording; in the config, where the session list reads it too, so that no worker takes
it for a replay of Chronicle's own agent to run) and says how to replay it (``replay_mode``:
strict or positional; ``on_divergence``: stop or live). Its calls come through the gateway
as any agent's do; the first one loads the recording (``replay_recording``) and what the
replay session already holds (after a restart of the server), and from then on each request
is served in memory:

- it is prepared as the recording's was (``LlmGateway.prepare`` with the parameters as
  ``upstream_params`` gives them), so its fingerprint is comparable with the recorded one;
- the same fingerprint (or any, in *positional* mode): the next recorded call is served, and
  recorded in the replay session as ``chronicle replay`` records a served call: an
  ``llm.call`` with the replay's request, the recording's answer, usage and cost, and
  ``replayed_from`` = the recorded call's seq (so the analytics views count it as served,
  not as spend); a streamed request gets the answer as a stream of chunks. The answer goes
  out first and the ``llm.call`` is appended behind it, in order (``replay_appends``: why
  that is safe, and what ``chronicle record --replay`` waits for before the replay ends);
- a recorded call that was redacted after it was recorded (a part of it, or a prompt
  message it keeps: ``RecordedCalls.blocked``) is a ``redacted`` divergence in either mode,
  as in ``chronicle replay``: its placeholders are not served as the recorded answer, and
  the request is not compared with what is gone. It is refused (HTTP 422, code
  ``replay_redacted``) or goes live, as below; a refused one is recorded without its prompt,
  which may hold what was redacted;
- another fingerprint (strict), or a call past the recording's last (either mode), is a
  divergence. ``stop``: the request is recorded as a refused ``llm.call`` (``error_kind``
  ``diverged``, no model called: attempts 0, cost 0) and answered with an error in the
  agent's protocol; ``chronicle record --replay`` sees that call in the log, stops the
  command and reports.
  ``live``: from this request on, the session's calls go to the model as any external
  session's (a fork: the recorded prefix served, the rest live). Both wait for the served
  calls' appends first: a refusal, and a call to the model, are committed before they are
  answered, after the calls served before them.

The report (which call, a diff) is made from the replay session's log by the command
(``replay_command``), the same typed divergences ``chronicle replay`` reports.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from app.config import Settings
from app.events import LlmCall
from app.events.llm import CUT, REFUSED
from app.events.session_config import ReplayOrigin, SessionConfig
from app.external.agent_command import RecordError
from app.external.calls import ChatRequest, unusable, upstream_error, upstream_params
from app.external.errors import GatewayError
from app.external.limits import recorded_refusal
from app.external.openai_protocol import usage_json
from app.external.replay_appends import ReplayAppends
from app.external.replay_recording import (
    RecordedCalls,
    external_config,
    load_recording,
    prepared_request,
    request_difference,
)
from app.llm import LlmError, LlmGateway, LlmReply
from app.llm.gateway import PreparedRequest
from app.replay.divergence import Divergence, ExtraCall, RedactedDivergence
from app.replay.gateway import served_call
from app.store import EventStore

#: ``error_kind`` of a request a replay refused: it diverged from the recording.
DIVERGED = "diverged"
#: The OpenAI ``code`` of that refusal.
DIVERGED_CODE = "replay_diverged"
#: The ``code`` of a refusal at a recorded call that was redacted; its status, 422, is one
#: the SDKs do not retry (409 they do).
REDACTED_CODE = "replay_redacted"
REDACTED_STATUS = 422
#: Sessions known not to be replays, kept per process (bounded).
KNOWN_LIMIT = 10_000
#: Replays kept in memory with their recordings, the last used (one evicted that is asked
#: again is loaded again, where its log says it is).
REPLAYS_LIMIT = 32

OnChunk = Callable[[Any], Awaitable[None]]


class ReplayServing:
    """Which sessions of this gateway are replays, and their state (one per process)."""

    def __init__(self, store: EventStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self._plain: OrderedDict[UUID, None] = OrderedDict()
        self._replays: OrderedDict[UUID, ReplayingSession] = OrderedDict()
        self._loading: dict[UUID, asyncio.Task[ReplayingSession | None]] = {}
        #: this process's serving: ``chronicle record --replay`` checks that the one that
        #: settled its replay's calls at the end is the one it asked at the start (another
        #: process, or this one restarted, would not know of calls answered but not written)
        self.instance = uuid.uuid4()

    async def serve(
        self, session_id: UUID, request: ChatRequest, model: str, on_chunk: OnChunk | None = None
    ) -> LlmReply | None:
        """The recorded answer when ``session_id`` is a replay that serves this request;
        None when the call goes to the model (not a replay, or one gone live)."""
        if session_id in self._plain:
            return None
        replaying = self._replays.get(session_id)
        if replaying is None:
            replaying = await self._load(session_id)
            if replaying is None:
                return None
        else:
            self._replays.move_to_end(session_id)
        return await replaying.serve(request, model, on_chunk)

    async def _load(self, session_id: UUID) -> ReplayingSession | None:
        task = self._loading.get(session_id)
        if task is None:  # one load for calls arriving together
            task = asyncio.create_task(self._read(session_id))
            self._loading[session_id] = task
            task.add_done_callback(lambda _: self._loading.pop(session_id, None))
        found = await asyncio.shield(task)
        if found is None:
            self._plain[session_id] = None
            if len(self._plain) > KNOWN_LIMIT:
                self._plain.popitem(last=False)
        else:
            found = self._replays.setdefault(session_id, found)
            self._evict()
        return found

    def _evict(self) -> None:
        """Forget the replays used least lately past ``REPLAYS_LIMIT``; never one whose
        served calls are still being written, or whose log failed (its next request and its
        end must meet that failure)."""
        excess = len(self._replays) - REPLAYS_LIMIT
        for session_id, replaying in list(self._replays.items()):
            if excess <= 0:
                break
            if replaying.appends.idle:
                del self._replays[session_id]
                excess -= 1

    async def settled(self, session_id: UUID) -> None:
        """Once every call this process served ``session_id`` is in its log; the
        ``GatewayError`` of an append that failed."""
        replaying = self._replays.get(session_id)
        if replaying is not None:
            await replaying.appends.settled()

    async def close(self) -> None:
        """At shutdown: write what the replays served (their failures are logged)."""
        for replaying in list(self._replays.values()):
            try:
                await replaying.appends.settled()
            except GatewayError:
                pass

    async def _read(self, session_id: UUID) -> ReplayingSession | None:
        head = await self.store.read(session_id, limit=1)
        config = external_config(head[0] if head else None)
        replay_of = config.replay.of if config is not None and config.replay else None
        if config is None or not replay_of:
            return None
        try:
            recording = await load_recording(self.store, UUID(str(replay_of)))
        except RecordError as exc:
            raise GatewayError(409, "invalid_request", f"this replay cannot run: {exc}") from None
        replaying = ReplayingSession(self.store, self.settings, session_id, recording, config)
        await replaying.resume()
        return replaying


class ReplayingSession:
    """One replay session being served: where it is in its recording."""

    def __init__(
        self,
        store: EventStore,
        settings: Settings,
        session_id: UUID,
        recording: RecordedCalls,
        config: SessionConfig,
    ) -> None:
        self.store = store
        self.settings = settings
        self.session_id = session_id
        self.recording = recording
        replay = config.replay or ReplayOrigin()
        self.positional = replay.mode == "positional"
        self.live_on_divergence = replay.on_divergence == "live"
        #: recorded calls served so far
        self.served = 0
        #: diverged and went on with the model (``live``)
        self.live = False
        #: diverged and stopped: what every later request is answered
        self.refusal: GatewayError | None = None
        self._lock = asyncio.Lock()
        #: what ``LlmGateway.prepare`` needs of the session's last llm.call: a request that
        #: goes on from it names only its new messages (``prompt_kept``), and the messages
        #: appended with it count as stored
        self._previous: dict[str, Any] | None = None
        #: prepare requests only (fingerprints as recorded); never call a model
        self._gateways: dict[str, LlmGateway] = {}
        #: the served calls' llm.call, appended behind their answers
        self.appends = ReplayAppends(store, session_id)

    async def resume(self) -> None:
        """Where an earlier process of the gateway left this replay (its log says)."""
        for event in await self.store.read(self.session_id):
            if event.kind != "llm.call":
                continue
            if event.payload.get("replayed_from") is not None:
                self.served += 1
            elif event.payload.get("error_kind") == DIVERGED:
                blocked = self._blocked(self.served + 1)
                self.refusal = (
                    _redacted_refusal(blocked)
                    if blocked is not None
                    else _refusal(str(event.payload.get("error")))
                )
            else:
                self.live = True

    def _gateway(self, model: str) -> LlmGateway:
        found = self._gateways.get(model)
        if found is None:
            config = self.settings.llm.config(model=model).model_copy(update={"api_key": None})
            found = self._gateways[model] = LlmGateway(self.store, config)
        return found

    async def serve(
        self, request: ChatRequest, model: str, on_chunk: OnChunk | None
    ) -> LlmReply | None:
        async with self._lock:  # calls are served in the order they come
            if self.live:
                return None
            if self.refusal is not None:
                raise self.refusal
            self.appends.check()
            gateway = self._gateway(model)
            prepared = gateway.prepare(
                request.messages, request.tools, self._previous, upstream_params(request.params)
            )
            step = self.served + 1
            recorded_calls = self.recording.served
            if self.served >= len(recorded_calls):
                extra = ExtraCall(
                    step=step,
                    summary=f"model call {step}: the agent asked the model again, but the "
                    f"recording has only {len(recorded_calls)} model calls",
                )
                await self._diverged(extra, gateway, prepared, model)
                return None
            recorded = recorded_calls[self.served]
            blocked = self._blocked(step)
            if blocked is not None:  # either mode: its answer or its request is not all there
                await self._diverged(blocked, gateway, prepared, model)
                return None
            if prepared.fingerprint != recorded.payload.get("fingerprint") and not self.positional:
                difference = await request_difference(
                    self.store,
                    self.recording,
                    step,
                    recorded.seq,
                    prepared_request(model, prepared),
                )
                await self._diverged(difference, gateway, prepared, model)
                return None
            self.served += 1
            call = served_call(recorded, prepared, model, streamed=on_chunk is not None)
            await self.appends.add(call, gateway.unstored(prepared))
            self._previous = _previous(call)
        reply = _reply(call)
        if call.error is not None:
            if on_chunk is not None and _answered_in_part(call):
                # the recorded stream broke after its first chunks (the client went away:
                # ``cut``; or the model's stream failed): those chunks, then its error, as
                # the recorded client saw them; never a whole answer it did not get
                for chunk in reply_chunks(call, request.model, ended=False):
                    await on_chunk(chunk)
            if call.error_kind == "bad_response":
                raise unusable(reply)
            if call.error_kind == REFUSED:  # a gateway limit refused it: refused the same way
                raise recorded_refusal(call.error)
            kind = "unavailable" if call.error_kind in (None, CUT) else call.error_kind
            raise upstream_error(LlmError(kind, call.error))  # type: ignore[arg-type]
        if on_chunk is not None:
            for chunk in reply_chunks(call, request.model):
                await on_chunk(chunk)
        return reply

    def _blocked(self, step: int) -> RedactedDivergence | None:
        """The ``redacted`` divergence when the recorded call ``step`` cannot be served."""
        if step > len(self.recording.served):
            return None
        return self.recording.blocked(step)

    async def _diverged(
        self, divergence: Divergence, gateway: LlmGateway, prepared: PreparedRequest, model: str
    ) -> None:
        """Go live (the caller then calls the model), or record the refusal and raise it;
        either after the calls served before are in the log. A request refused at a
        redacted call is recorded without its prompt and tools: they may hold again what
        was redacted from the recording, which the replay must not store anew."""
        await self.appends.settled()
        if self.live_on_divergence:
            self.live = True
            return
        at_redacted = isinstance(divergence, RedactedDivergence)
        refused = LlmCall(
            model=model,
            params={**prepared.params},
            fingerprint=prepared.fingerprint,
            prompt=[] if at_redacted else prepared.recorded_prompt(),
            prompt_kept=None if at_redacted else prepared.kept,
            tools=None if at_redacted else prepared.tools_hash,
            cost_usd=0.0,
            latency_ms=0.0,
            attempts=0,  # no model was asked
            error=f"the replay diverged: {divergence.summary}",
            error_kind=DIVERGED,
        )
        unstored = {} if at_redacted else gateway.unstored(prepared)
        await self.store.append(self.session_id, [refused], messages=unstored)
        self._previous = _previous(refused)
        self.refusal = (
            _redacted_refusal(divergence)
            if isinstance(divergence, RedactedDivergence)
            else _refusal(refused.error or "")
        )
        raise self.refusal


def _refusal(error: str) -> GatewayError:
    return GatewayError(
        400,
        "invalid_request",
        f"chronicle record --replay: {error}; this request differs from the recording, so "
        "the replay stopped (`chronicle record --replay` reports the difference; replay with "
        "--on-divergence live to go on with the model instead)",
        code=DIVERGED_CODE,
    )


def _redacted_refusal(divergence: RedactedDivergence) -> GatewayError:
    return GatewayError(
        REDACTED_STATUS,
        "invalid_request",
        f"chronicle record --replay: {divergence.summary}; the recording no longer holds this "
        "call as it was, so the replay stopped here (`chronicle record --replay` reports it; "
        "replay with --on-divergence live to go on with the model from here instead)",
        code=REDACTED_CODE,
    )


def _previous(call: LlmCall) -> dict[str, Any]:
    """What ``LlmGateway.prepare`` needs of the call before the next one."""
    return {"fingerprint": call.fingerprint, "prompt_kept": call.prompt_kept, "prompt": call.prompt}


def _reply(call: LlmCall) -> LlmReply:
    """The served answer; its event is not in the log yet (``replay_appends``)."""
    response = call.response
    return LlmReply(
        call=call,
        event=None,
        content=response.content,
        tool_calls=list(response.tool_calls),
        finish_reason=response.finish_reason,
    )


def _answered_in_part(call: LlmCall) -> bool:
    """Whether a failed call's recorded stream had sent some of its answer."""
    response = call.response
    return bool(response.content or response.reasoning_content or response.tool_calls)


def reply_chunks(call: LlmCall, model: str, *, ended: bool = True) -> list[dict[str, Any]]:
    """A recorded answer as the OpenAI ``chat.completion.chunk`` dicts a stream of it sends
    (the recording keeps the answer, not its chunks): its reasoning, its text, each tool
    call, the finish reason, then the usage (``ended=False``: a stream that broke before
    its finish, which has neither)."""
    response = call.response
    head = {
        "id": response.id or "chatcmpl-replay",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": response.model or model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant"})]
    if response.reasoning_content:
        chunks.append(chunk({"reasoning_content": response.reasoning_content}))
    if response.content:
        chunks.append(chunk({"content": response.content}))
    for index, tool in enumerate(response.tool_calls):
        function = {"name": tool.name, "arguments": tool.arguments}
        called = {"index": index, "id": tool.id, "type": "function", "function": function}
        chunks.append(chunk({"tool_calls": [called]}))
    if ended:
        chunks.append(chunk({}, response.finish_reason or "stop"))
        chunks.append({**head, "choices": [], "usage": usage_json(call.usage)})
    return chunks
