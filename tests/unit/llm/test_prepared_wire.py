"""A prepared request's messages as sent: each converted for the wire once, the same as
converting the whole prompt every step (what the gateway did before)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import app.llm.gateway as gateway_module
from app.llm import LlmConfig, LlmGateway
from app.llm.wire import for_the_wire


class _NoStore:
    masker = None


def _gateway() -> LlmGateway:
    return LlmGateway(_NoStore(), LlmConfig(model="m", native_tool_calling=True))  # type: ignore[arg-type]


TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {}}}]

# Text with lone surrogates (what the wire form escapes), NUL, non-ASCII and plain ASCII.
TEXT = st.text(alphabet=st.sampled_from(["a", " ", "é", "\x00", "\ud800", "\udce9", "\U0001f600"]))
MESSAGE = st.builds(
    lambda role, text, key: {"role": role, "content": text, key: [text, {"k": text}]},
    st.sampled_from(["user", "assistant", "tool"]),
    TEXT,
    st.sampled_from(["name", "caf\udce9", "x"]),
)
#: A step: add messages at the end (the common case), or go back to a prefix and go on
#: (a condensed or forked prompt).
STEP = st.tuples(st.integers(min_value=0, max_value=3), st.lists(MESSAGE, max_size=3))


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(STEP, min_size=1, max_size=8))
def test_the_wire_form_is_the_whole_prompt_converted(
    steps: list[tuple[int, list[dict[str, Any]]]],
) -> None:
    gateway = _gateway()
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "s\udce9"}]
    for back, new in steps:
        conversation = [*conversation[: max(1, len(conversation) - back)], *new]
        request = gateway.prepare(conversation, TOOLS)
        # the bytes that went out before: the whole prompt converted at every step
        assert request.wire == [for_the_wire(message) for message in request.messages]
        assert request.wire == _gateway().prepare(conversation, TOOLS).wire


def test_a_step_converts_only_its_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before, every step sent each message of the prompt through the conversion's cache
    # (one lookup per message, a cost growing with the session); now only the new ones are
    # converted. Counted at the one place the gateway converts a message.
    converted: list[Any] = []

    def counting(value: Any) -> Any:
        converted.append(value)
        return for_the_wire(value)

    monkeypatch.setattr(gateway_module, "for_the_wire", counting)
    gateway = _gateway()
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    gateway.prepare(conversation, TOOLS)
    for n in range(50):
        conversation = [
            *conversation,
            {"role": "assistant", "content": f"a{n}"},
            {"role": "tool", "content": f"caf\udce9 {n}"},
        ]
        converted.clear()
        request = gateway.prepare(conversation, TOOLS)
        assert converted == conversation[-2:]
        assert request.wire[-1] == {"role": "tool", "content": f"caf\\udce9 {n}"}
        assert len(request.wire) == len(conversation)


class _Answering(LlmGateway):
    """The gateway with a model that answers at once and is never imported (no litellm)."""

    def __init__(self) -> None:
        super().__init__(_NoStore(), LlmConfig(model="m", native_tool_calling=True))  # type: ignore[arg-type]
        self.sent_tools: list[Any] = []

    async def load_client(self) -> None:
        return None

    async def _call(self, messages: Any, tools: Any, params: Any) -> Any:
        self.sent_tools.append(tools)
        message = {"role": "assistant", "content": "ok"}
        return {"choices": [{"message": message, "finish_reason": "stop"}], "usage": {}}

    def _cost(self, response: Any, usage: Any) -> float | None:
        return None


async def test_the_tools_are_converted_once_while_they_are_the_same_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An agent builds a new list of the same tool objects each step (CodeActAgent.tools()).
    # Before, a new list meant masking into a new list and converting every tool schema for
    # the wire again, each step (the counter below saw the tools at every step); now the
    # tools are converted once, and again only when a tool object changes.
    converted: list[Any] = []

    def counting(value: Any) -> Any:
        converted.append(value)
        return for_the_wire(value)

    monkeypatch.setattr(gateway_module, "for_the_wire", counting)
    tool = {"type": "function", "function": {"name": "caf\udce9", "parameters": {}}}
    gateway = _Answering()
    conversation: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    for n in range(5):
        conversation = [*conversation, {"role": "user", "content": f"u{n}"}]
        converted.clear()
        await gateway.complete(uuid.uuid4(), conversation, [tool], record=False)
        assert [value for value in converted if value is tool] == ([tool] if n == 0 else [])
        assert gateway.sent_tools[-1] == [for_the_wire(tool)]
    other = {**tool, "function": {"name": "g", "parameters": {}}}
    converted.clear()
    await gateway.complete(uuid.uuid4(), conversation, [tool, other], record=False)
    assert other in converted and gateway.sent_tools[-1] == [for_the_wire(tool), other]
