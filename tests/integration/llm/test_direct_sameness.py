"""The direct path (app.llm.direct) records what litellm's path records, call for call.

The same scripted calls go through a gateway with ``direct_calls`` off (every call through
litellm, as before) and one with it on, against the fake model server, each into a session
of its own on real PostgreSQL; their ``llm.call`` events, the requests the upstream got, what
the caller got back (or the error it saw) and the streamed chunks must be the same, but for
ids, times and latency.
"""

from __future__ import annotations

import json
import re
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.external.calls import chunk_dict, upstream_error
from app.llm import LlmConfig, LlmError, LlmGateway
from app.store import EventStore
from tests.support.fake_llm import FakeLlmServer, Reply, raw_completion, raw_tool_call, tool_call

BASH = {
    "type": "function",
    "function": {
        "name": "execute_bash",
        "description": "Run a command.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
SYSTEM = {"role": "system", "content": "You are a coding agent."}


@dataclass
class Call:
    replies: list[Reply]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] | None = None
    stream: bool = False
    #: whether the direct path answers it (else it stays on litellm)
    direct: bool = True


def _user(text: str) -> list[dict[str, Any]]:
    return [SYSTEM, {"role": "user", "content": text}]


CALLS = [
    Call([Reply(content="Hello.")], _user("hi")),
    Call(  # a tool call, after an earlier one and its result
        [Reply(tool_calls=[tool_call("execute_bash", command="ls")], cached_tokens=30)],
        [
            *_user("list the files"),
            {
                "role": "assistant",
                "content": None,
                "name": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "execute_bash", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        ],
        [BASH],
        {
            "temperature": 0.2,
            "max_tokens": 50,
            "tool_choice": "auto",
            "seed": 7,
            "parallel_tool_calls": False,
            "extra_body": {"top_k": 3, "repetition_penalty": None},
        },
    ),
    Call(  # every other parameter sent directly
        [Reply(content="sampled")],
        _user("sample"),
        params={
            "temperature": 1.0,
            "top_p": 0.9,
            "stop": ["END"],
            "max_tokens": None,
            "frequency_penalty": 0.5,
            "presence_penalty": -0.5,
            "seed": None,
        },
    ),
    Call(  # retried: a 429 with Retry-After, then a 503, then the answer
        [
            Reply(status=429, headers={"Retry-After": "0"}, error="slow down"),
            Reply(status=503, error="overloaded"),
            Reply(content="after the retries", reasoning_tokens=4),
        ],
        _user("retry me"),
    ),
    Call([Reply(status=500, error="down")] * 3, _user("fail for good")),
    Call(  # a refused context overflow: the code agents act on
        [
            Reply(
                status=400,
                error_code="context_length_exceeded",
                error="This model's maximum context length is 8192 tokens. However, your "
                "messages resulted in 9000 tokens.",
            )
        ],
        _user("too long"),
    ),
    Call([Reply(status=401, error_code="invalid_api_key", error="Incorrect API key")], _user("k")),
    Call(
        [Reply(body='{"id": "x", "object": "chat.completion", "model": "m", "choices": []}')],
        _user("empty choices"),
    ),
    Call([Reply(body="<html>login</html>", content_type="text/html")], _user("html")),
    Call([Reply(body="")], _user("empty body")),
    Call(  # string booleans and absurd usage
        [
            Reply(
                content="ok",
                usage_json='{"prompt_tokens": "12", "completion_tokens": true, '
                '"total_tokens": 1e999}',
            )
        ],
        _user("odd usage"),
    ),
    Call(
        [Reply(content="ok", usage_json='{"prompt_tokens": -5, "completion_tokens": 1e30}')],
        _user("absurd usage"),
    ),
    Call(
        [Reply(tool_calls=[raw_tool_call("execute_bash", '{"command": "ls", "all": "false"}')])],
        _user("string boolean arguments"),
        [BASH],
    ),
    Call(
        [Reply(body=raw_completion('{"role": "assistant", "content": "nul \\u0000 here"}'))],
        _user("nul"),
    ),
    Call(
        [Reply(body=raw_completion('{"role": "assistant", "content": "lone \\udce9 here"}'))],
        _user("surrogate"),
    ),
    Call(
        [
            Reply(
                body=raw_completion(
                    '{"role": "assistant", "content": null, "refusal": "false", '
                    '"tool_calls": [{"id": "t", "type": "function", "function": '
                    '{"name": "execute_bash", "arguments": {"command": "ls"}}}]}',
                    finish_reason="tool_calls",
                )
            )
        ],
        _user("arguments as an object"),
        [BASH],
    ),
    Call(
        [
            Reply(
                body='{"id": "n", "object": "chat.completion", "model": "m", "choices": '
                '[{"index": 0, "message": {"role": "assistant", "content": "no usage"}, '
                '"finish_reason": "stop"}]}'
            )
        ],
        _user("no usage"),
    ),
    # what stays on litellm: a prompt litellm rewrites, one it cannot send as JSON
    Call(
        [Reply(content="dev")], [{"role": "developer", "content": "d"}, *_user("x")], direct=False
    ),
    Call(
        [Reply(content="parts")],
        [SYSTEM, {"role": "user", "content": [{"type": "text", "text": "in parts"}]}],
        direct=False,
    ),
    Call([Reply(content="s")], _user("lone \udce9 in the prompt"), direct=False),
    Call([Reply(content="u")], _user("a user param"), params={"user": "me"}, direct=False),
]


def _events(*chunks: dict[str, Any], done: bool = True) -> str:
    """An SSE body of ``chat.completion.chunk`` frames (``choices`` and ``usage`` given)."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    frames = [f"data: {json.dumps({**head, **chunk})}\n\n" for chunk in chunks]
    return "".join(frames) + ("data: [DONE]\n\n" if done else "")


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


USAGE = {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35}
SSE = "text/event-stream"

#: Streamed calls: the chunks handed on must be the same too.
STREAMS = [
    Call(
        [Reply(content="a streamed reply", stream_pieces=["a ", "streamed ", "reply"])],
        _user("stream"),
    ),
    Call(  # tool calls streamed in pieces (each call's arguments in two), after text
        [
            Reply(
                content="running both",
                tool_calls=[
                    tool_call("execute_bash", command="ls"),
                    tool_call("execute_bash", command="pwd"),
                ],
                cached_tokens=10,
            )
        ],
        _user("stream tools"),
        [BASH],
        {"temperature": 0.3, "tool_choice": "auto", "extra_body": {"top_k": 2}},
    ),
    Call(  # the usage in the last chunk, beside its finish reason
        [
            Reply(
                body=_events(
                    _delta({"role": "assistant", "content": "last"}),
                    {**_delta({}, "stop"), "usage": USAGE},
                ),
                content_type=SSE,
            )
        ],
        _user("usage in the last chunk"),
    ),
    Call(  # no usage sent (a server that ignores stream_options)
        [
            Reply(
                body=_events(
                    _delta({"role": "assistant", "content": "no usage"}), _delta({}, "stop")
                ),
                content_type=SSE,
            )
        ],
        _user("stream without usage"),
    ),
    Call(  # a chunk with no choices first (as Azure's filter results), then the reply
        [
            Reply(
                body=_events(
                    {"choices": [], "prompt_filter_results": []},
                    _delta({"role": "assistant", "content": "after"}),
                    _delta({"content": " an empty one"}),
                    _delta({}, "stop"),
                    {"choices": [], "usage": USAGE},
                ),
                content_type=SSE,
            )
        ],
        _user("an empty choices chunk"),
    ),
    Call(  # cut by the upstream after the role's chunk and two pieces: not retried
        [
            Reply(
                content="cut short here",
                stream_pieces=["cut ", "short ", "here"],
                stream_cut_after=3,
            )
        ],
        _user("cut mid-stream"),
    ),
    # closed before its first frame: litellm reads an empty reply (finish reason "stop")
    Call([Reply(content="never", stream_cut_after=0)], _user("cut before a chunk")),
    Call(  # errors before the stream (retried), then a stream
        [
            Reply(status=429, headers={"Retry-After": "0"}, error="slow down"),
            Reply(status=503, error="overloaded"),
            Reply(content="streamed after retries"),
        ],
        _user("stream retried"),
    ),
    Call([Reply(status=400, error="bad")], _user("stream refused")),
    Call(
        [Reply(body=raw_completion('{"role": "assistant", "content": "json"}'))],
        _user("a completion to a stream"),
    ),
    Call([Reply(body="data: {not json\n\n", content_type=SSE)] * 3, _user("a bad first chunk")),
    Call(  # a bad chunk after the first was handed on
        [
            Reply(
                body=_events(_delta({"role": "assistant", "content": "fine"}), done=False)
                + "data: {not json\n\n",
                content_type=SSE,
            )
        ],
        _user("a bad later chunk"),
    ),
]
for streamed in STREAMS:
    streamed.stream = True


def _config(fake: FakeLlmServer, model: str, direct: bool, **overrides: Any) -> LlmConfig:
    return LlmConfig.model_validate(
        {
            "model": model,
            "base_url": fake.base_url,
            "api_key": "sk-test-secret",
            "retries": 2,
            "retry_min_wait": 0.01,
            "retry_max_wait": 0.02,
            "native_tool_calling": True,
            "direct_calls": direct,
            **overrides,
        }
    )


#: the fake server's ids and times (milliseconds), and the ids litellm makes up (uuids)
_VOLATILE = re.compile(r"\d{10,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TOOK = re.compile(r"time taken=([0-9.]+) seconds")  # a timeout's message says how long


def _same(value: Any) -> Any:
    """``value`` with ids, times and latency taken out."""
    if isinstance(value, dict):
        return {k: _same(v) for k, v in value.items() if k not in ("latency_ms", "created")}
    if isinstance(value, list):
        return [_same(v) for v in value]
    if isinstance(value, str):
        return _TOOK.sub("time taken=<t> seconds", _VOLATILE.sub("<t>", value))
    return value


async def _run(
    store: EventStore,
    fake: FakeLlmServer,
    model: str,
    direct: bool,
    calls: list[Call] = CALLS,
    **overrides: Any,
) -> dict[str, Any]:
    gateway = LlmGateway(store, _config(fake, model, direct, **overrides))
    session = uuid.uuid4()
    seen: list[Any] = []
    first = len(fake.requests)
    for call in calls:
        fake.script(*call.replies)
        chunks: list[dict[str, Any]] = []

        async def on_chunk(chunk: Any, chunks: list[dict[str, Any]] = chunks) -> None:
            chunks.append(chunk_dict(chunk))

        try:
            reply = await gateway.complete(
                session,
                call.messages,
                call.tools,
                params=call.params,
                on_chunk=on_chunk if call.stream else None,
            )
            seen.append(
                {
                    "content": reply.content,
                    "tool_calls": [t.model_dump() for t in reply.tool_calls],
                    "finish_reason": reply.finish_reason,
                    "error": reply.error,
                    "chunks": chunks,
                }
            )
        except LlmError as exc:
            error = upstream_error(exc)
            agent_sees = [error.status, error.kind, error.message, error.code]
            seen.append(
                {
                    "kind": exc.kind,
                    "message": exc.message,
                    "attempts": exc.attempts,
                    "agent_sees": agent_sees,
                    "chunks": chunks,
                }
            )
        # replies the call did not ask for (fewer attempts): the next call must not get them
        seen[-1]["unasked"] = len(fake.replies)
        fake.replies.clear()
    events = await store.read(session)
    requests = [{k: v for k, v in r.items() if k != "_authorization"} for r in fake.requests]
    return {
        "events": [[e.kind, e.source, e.cause, e.payload] for e in events],
        "seen": seen,
        "requests": requests[first:],
        "direct_answers": gateway.direct_answers,
    }


# one priced in litellm's map (the cost is compared too), one it does not know (self-hosted)
@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "openai/self-hosted-model"])
async def test_the_direct_path_records_what_litellm_records(
    store: EventStore, fake_llm: FakeLlmServer, model: str
) -> None:
    through_litellm = await _run(store, fake_llm, model, direct=False)
    direct = await _run(store, fake_llm, model, direct=True)
    assert through_litellm["direct_answers"] == 0
    # answered directly: the plain successes (the retried one's last attempt), empty choices,
    # odd but readable replies (string booleans, -5 and 1e30 counts, NUL, no usage, arguments
    # as an object); the errors, non-JSON bodies, 1e999 and a lone surrogate went to litellm
    assert direct["direct_answers"] == 10
    assert len(direct["events"]) == len(CALLS)
    _assert_same(through_litellm, direct)
    # the priced model's cost is there to compare
    priced = through_litellm["events"][0][3]["cost_usd"]
    assert priced > 0 if model.endswith("mini") else priced is None


def _assert_same(through_litellm: dict[str, Any], direct: dict[str, Any]) -> None:
    """The two runs' events, what their callers saw (chunks too) and the upstream's
    requests are the same but for ids, times and latency."""
    for index, (a, b) in enumerate(zip(through_litellm["events"], direct["events"], strict=True)):
        differs = {
            k: (v, _same(b[3]).get(k))
            for k, v in {**_same(b[3]), **_same(a[3])}.items()
            if _same(b[3]).get(k) != v
        }
        assert _same(b) == _same(a), f"call {index}: {json.dumps(differs, default=str)}"
    for index, (a, b) in enumerate(zip(through_litellm["seen"], direct["seen"], strict=True)):
        assert _same(b) == _same(a), f"call {index}"
    assert _same(direct["requests"]) == _same(through_litellm["requests"])


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "openai/self-hosted-model"])
async def test_a_stream_goes_directly_and_hands_on_what_litellm_hands_on(
    store: EventStore, fake_llm: FakeLlmServer, model: str
) -> None:
    through_litellm = await _run(store, fake_llm, model, direct=False, calls=STREAMS)
    direct = await _run(store, fake_llm, model, direct=True, calls=STREAMS)
    assert through_litellm["direct_answers"] == 0
    _assert_same(through_litellm, direct)
    # the streams that opened (the retried one's last attempt, each attempt of the bad first
    # chunk); the refused, the retried one's errors and the JSON body went to litellm
    assert direct["direct_answers"] == 12
    seen = {
        call.messages[-1]["content"]: s for call, s in zip(STREAMS, direct["seen"], strict=True)
    }
    # what there is to compare: every kind of chunk, a cut stream's, a priced stream's cost
    assert len(seen["stream tools"]["chunks"]) > 8
    assert any("usage" in chunk for chunk in seen["usage in the last chunk"]["chunks"])
    assert [c["choices"][0]["delta"].get("content") for c in seen["cut mid-stream"]["chunks"]]
    assert seen["cut mid-stream"]["kind"] == "unavailable"
    assert seen["a bad first chunk"]["attempts"] == 3  # retried: nothing was handed on
    assert seen["a bad later chunk"]["attempts"] == 1 and seen["a bad later chunk"]["chunks"]
    priced = direct["events"][0][3]["cost_usd"]
    assert priced > 0 if model.endswith("mini") else priced is None


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_failed_connection_or_a_timeout_is_recorded_as_through_litellm(
    store: EventStore, fake_llm: FakeLlmServer
) -> None:
    nobody = {"base_url": f"http://127.0.0.1:{_closed_port()}/v1", "retries": 1}
    slow = {"timeout": 0.3, "retries": 1}
    cases: list[tuple[dict[str, Any], list[Call]]] = [
        (nobody, [Call([], _user("anyone there?"))]),
        (nobody, [Call([], _user("anyone there to stream?"), stream=True)]),
        (slow, [Call([Reply(content="late", delay=1.0)] * 2, _user("too slow"), stream=True)]),
        (slow, [Call([Reply(content="late", delay=1.0)] * 2, _user("too slow"))]),
    ]
    for overrides, calls in cases:
        runs = [
            await _run(store, fake_llm, "openai/self-hosted-model", direct, calls, **overrides)
            for direct in (False, True)
        ]
        assert _same(runs[1]["events"]) == _same(runs[0]["events"])
        assert _same(runs[1]["seen"]) == _same(runs[0]["seen"])
        assert runs[0]["seen"][0]["kind"] in ("unreachable", "unavailable")
        assert runs[0]["seen"][0]["attempts"] == 2
    # the direct attempt that timed out says how long it took, as litellm's says
    took = [float(t) for t in _TOOK.findall(runs[1]["seen"][0]["message"])]
    assert took and took[0] >= 0.3
