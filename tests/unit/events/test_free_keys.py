"""Object keys with lone surrogates reach the payload as they were sent (app.events.free_keys).

pydantic's JSON mode turned a surrogate in a key of a ``dict[str, Any]`` into U+FFFD and
raised ``UnicodeEncodeError`` for one nested under ``Any``: an MCP call's arguments, a model
call's parameters or usage as sent, a tool's structured content lost a key or could not be
recorded at all.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from app.events.actions import McpCall
from app.events.canonical import encode
from app.events.free_keys import free_fields, holds_surrogate_key, jsonable_keeping_keys
from app.events.llm import LlmCall, LlmUsage
from app.events.observations import McpResult
from app.events.stored_form import restore

ARGUMENTS = {"caf\udce9": 1, "nested": {"k\ud800": ["x\udfff", {"\udc80": None}]}}


def test_an_mcp_calls_keys_are_kept_at_every_depth() -> None:
    payload = McpCall(server="s", tool="t", arguments=ARGUMENTS).payload()
    assert payload["arguments"] == ARGUMENTS
    assert restore(encode(payload).stored, {})["arguments"] == ARGUMENTS


def test_a_nested_models_free_field_is_kept_and_the_rest_dumped_as_json() -> None:
    call = LlmCall(
        model="m",
        fingerprint="f",
        params={"extra_body": {"t\udce9": 1}},
        usage=LlmUsage(prompt_tokens=3, as_sent={"odd\udce9": "1e999"}),
    )
    payload = call.payload()
    assert payload["params"] == {"extra_body": {"t\udce9": 1}}
    assert payload["usage"]["as_sent"] == {"odd\udce9": "1e999"}
    assert payload["usage"]["prompt_tokens"] == 3
    plain = call.model_copy(update={"params": {}, "usage": LlmUsage(prompt_tokens=3)})
    assert {k: v for k, v in payload.items() if k not in {"params", "usage"}} == {
        k: v for k, v in plain.payload().items() if k not in {"params", "usage"}
    }


def test_structured_content_under_any_is_kept() -> None:
    result = McpResult(content=[{"type": "text", "text": "ok"}], structured_content={"\udce9": 2})
    assert result.payload()["structured_content"] == {"\udce9": 2}


def test_free_fields_are_those_that_reach_any() -> None:
    assert free_fields(McpCall) == {"arguments", "imported"}  # ImportOrigin.kept reaches Any
    assert McpCall._free_fields == {"arguments"}  # imported is written apart (Event.payload)
    assert {"params", "usage"} <= free_fields(LlmCall)
    assert "model" not in free_fields(LlmCall)


def test_only_keys_count_and_other_values_become_what_json_mode_writes() -> None:
    assert not holds_surrogate_key({"k": "value \udce9"})
    assert holds_surrogate_key([{"a": {"\udce9": 1}}])
    moment = datetime(2026, 12, 1, tzinfo=UTC)
    ident = uuid.UUID(int=7)
    assert jsonable_keeping_keys({"\udce9": (moment, ident)}) == {
        "\udce9": ["2026-12-01T00:00:00Z", str(ident)]
    }
