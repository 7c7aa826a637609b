"""The record of one model call (see DESIGN.md, "Model calls are events")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.events.base import Event, Source


class ToolCall(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str


def _unset(value: Any) -> bool:
    return value is None


#: A field written only when it has a value (a payload recorded before it was added, or by
#: a model that sends none, stays as it was).
def _optional(description: str) -> Any:
    return Field(default=None, exclude_if=_unset, description=description)


class LlmResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    reasoning_content: str | None = _optional("the model's reasoning text, as it sent it")
    id: str | None = _optional("the reply's id (gen_ai.response.id)")
    model: str | None = _optional("the model that answered (gen_ai.response.model)")


class LlmUsage(BaseModel):
    """Token counts of one call. A count the model sent that is not one (``1e999``,
    ``"abc"``, negative, beyond ``MAX_COUNT``: app.events.usage) is None, unknown, and the
    usage as it was sent is kept in ``as_sent``; a count the model did not send is 0 for the
    first four (as before) and None for the others."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    #: tokens of the prompt read from the provider's cache (gen_ai.usage.cache_read.input_tokens)
    cached_tokens: int | None = 0
    total_tokens: int | None = 0
    cache_creation_tokens: int | None = _optional(
        "tokens of the prompt written to the provider's cache "
        "(gen_ai.usage.cache_creation.input_tokens)"
    )
    reasoning_tokens: int | None = _optional(
        "output tokens spent on reasoning, part of completion_tokens "
        "(gen_ai.usage.reasoning.output_tokens)"
    )
    as_sent: dict[str, Any] | None = _optional(
        "the usage as the model sent it, when a count of it could not be read"
    )


class LlmCall(Event):
    """One model call: what was asked (by content hash), what came back, and what it cost.

    ``prompt`` lists the sha256 (hex) of each message, stored once in ``llm_messages``;
    ``tools`` is the hash of the tool list offered. With ``prompt_kept`` set, the prompt was
    the first ``prompt_kept`` messages of the previous ``llm.call`` of the session's log,
    then the ones ``prompt`` lists (``app.events.prompts.whole_prompts``): a conversation grows
    at the end, and listing every message again made a session's log, and each step's
    write, grow with the square of its length. Without it (calls recorded before, the first
    call of a run) ``prompt`` is the whole prompt. A call that failed for good records
    ``error`` (and no response) so the audit trail has it too; ``error_kind`` says which way
    it failed (``auth``, ``rate_limited``, ...). ``bad_response`` means the server answered
    but nothing in the reply could be used (no choices, not JSON): the agent tells the model
    with an ``error`` event caused by this call and goes on.
    """

    kind: Literal["llm.call"] = "llm.call"
    source: Source = "agent"
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    fingerprint: str
    prompt: list[str] = Field(default_factory=list, description="content hashes of messages")
    prompt_kept: int | None = Field(
        default=None, ge=0, description="messages of the previous call's prompt it begins with"
    )
    tools: str | None = Field(default=None, description="content hash of the tool list")
    tool_calling: Literal["native", "prompt"] = "native"
    response: LlmResponse = Field(default_factory=LlmResponse)
    usage: LlmUsage = Field(default_factory=LlmUsage)
    cost_usd: float | None = None
    latency_ms: float | None = Field(
        default=0.0, description="how long the call took; None when a recording does not say"
    )
    attempts: int = Field(
        default=1, ge=0, description="upstream requests made (0: refused by a gateway limit)"
    )
    error: str | None = None
    error_kind: str | None = None


#: ``error_kind`` of a call its own run recorded as stopped before the model answered.
INTERRUPTED = "interrupted"
#: ``error_kind`` of a call that was in flight when its worker died (kill -9, a lost machine)
#: and so was never recorded by it: the worker that took the session over records it
#: (``app.agent.in_flight``), its answer, usage and cost unknown.
LOST = "lost"
#: ``error_kind`` of a streamed call whose client went away after the first chunks (a gateway
#: client that disconnected): the model answered in part, the usage it bills is unknown.
CUT = "cut"
#: ``error_kind`` of a gateway call a limit refused (app/external/limits.py): no upstream
#: request was made (``attempts`` 0), it cost nothing; the agent was answered with the error.
REFUSED = "refused"
#: Calls that answered nothing: the run that followed asked the model again.
ANSWERED_NOTHING = frozenset({INTERRUPTED, LOST})
#: Failed calls the provider may still have billed, so their session's cost is unknown (≥).
MAYBE_PAID = frozenset({LOST, CUT})


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (LlmCall,)
