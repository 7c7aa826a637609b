"""One model call between its prepared request and its recorded ``llm.call``.

``LlmGateway.complete`` prepares a request, attempts it (retrying what may be retried) and
records how it ended; what those steps share lives here: the request as recorded, the clock,
the attempts so far, a stream's chunks, and how each way a call can end (an answer, an
unusable reply, a failure, a cut stream) becomes its ``llm.call``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from app.events import LlmCall, LlmResponse, LlmUsage
from app.llm.reply import read_reply
from app.llm.streaming import assembled, sent_usage

if TYPE_CHECKING:
    from app.llm.gateway import LlmGateway, LlmReply, PreparedRequest
    from app.store import RecordedEvent


@dataclass
class CallInProgress:
    """A call's state across its attempts. ``unstored``: the prompt messages its ``llm.call``
    names that are not stored yet, appended with it (by the gateway, or by the caller of an
    unrecorded call)."""

    gateway: LlmGateway
    session_id: UUID
    request: PreparedRequest
    native: bool
    cause: int | None
    streamed: bool
    #: the messages and tools as sent (tools described in the prompt where not native)
    sent: list[dict[str, Any]]
    offering: list[dict[str, Any]]
    unstored: dict[str, str]
    params: dict[str, Any]
    started: float = field(default_factory=time.monotonic)
    attempts: int = 0
    #: a streamed call's chunks so far (of its last attempt)
    chunks: list[Any] = field(default_factory=list)

    def event(self, **outcome: Any) -> LlmCall:
        """The llm.call for this request, with how it ended (a response, or an error)."""
        request = self.request
        return LlmCall(
            model=self.gateway.config.model,
            params=self.params,
            fingerprint=request.fingerprint,
            prompt=request.recorded_prompt(),
            prompt_kept=request.kept,
            tools=request.tools_hash,
            tool_calling="native" if self.native else "prompt",
            latency_ms=(time.monotonic() - self.started) * 1000,
            attempts=self.attempts,
            cause=self.cause,
            **outcome,
        )

    async def recorded(self, call: LlmCall, wanted: bool) -> RecordedEvent | None:
        """Append ``call`` with the messages it names, in one transaction (no call without
        its prompt); nothing when the caller appends it (``wanted`` False)."""
        if not wanted:
            return None
        gateway = self.gateway
        event = (await gateway.store.append(self.session_id, [call], messages=self.unstored))[0]
        gateway.stored_now(self.unstored)
        gateway.prompt_stored(self.request)
        return event

    def handed(self, wanted: bool) -> dict[str, str]:
        """The messages for the caller to append with an unrecorded call."""
        return {} if wanted else self.unstored

    def unusable(self, problem: str, **outcome: Any) -> LlmReply:
        """A reply that came back but cannot be used: returned, not raised."""
        from app.llm.gateway import LlmReply

        call = self.event(error=problem, error_kind="bad_response", **outcome)
        return LlmReply(call=call, event=None, content=None, tool_calls=[],
                        finish_reason=None, error=problem)  # fmt: skip

    def partial(self) -> dict[str, Any]:
        """What a stream that ended early sent: its response, usage and cost."""
        if not self.chunks:
            return {}
        try:
            response = assembled(self.chunks)
        except Exception:  # chunks litellm cannot add up: the error says what happened
            return {}
        read = read_reply(response, self.request.tools, prompt_tools=not self.native)
        answer = LlmResponse(
            content=read.content, tool_calls=read.tool_calls,
            finish_reason=read.finish_reason, reasoning_content=read.reasoning_content,
            id=read.response_id, model=read.response_model,
        )  # fmt: skip
        usage = self.usage(read.usage)
        return {"response": answer, "usage": usage, "cost_usd": self.gateway.cost(response, usage)}

    def usage(self, usage: LlmUsage) -> LlmUsage:
        """The usage to record: a stream's is unknown when no chunk carried it (litellm then
        estimates, which is not what the provider counted)."""
        if not self.streamed or sent_usage(self.chunks):
            return usage
        return LlmUsage(prompt_tokens=None, completion_tokens=None, total_tokens=None)
