"""Usage as models send it: counts kept exactly, odd ones unknown with the usage as sent,
cache and reasoning counts and the reasoning text read from every shape (pure code)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from app.events import LlmCall, LlmUsage
from app.events.canonical import canonical_json
from app.events.usage import MAX_COUNT, safe_copy, token_count
from app.llm.reply import read_reply, read_usage


def reply(usage: Any, **message: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-7",
        "model": "fake-model-2026",
        "choices": [{"message": {"content": "ok", **message}, "finish_reason": "stop"}],
        "usage": usage,
    }


@pytest.mark.parametrize(
    ("sent", "count"),
    [(12, 12), ("12", 12), (12.0, 12), (" 7 ", 7), (0, 0), (10**15, 10**15),
     (MAX_COUNT, MAX_COUNT), (MAX_COUNT + 1, None), (10**25, None), (-5, None),
     (math.inf, None), (math.nan, None), ("abc", None), ("1e999", None), (12.5, None),
     (True, None), ([], None), ({}, None), ("9" * 400, None)],
)  # fmt: skip
def test_a_count_is_a_whole_number_up_to_2_53_else_unknown(sent: Any, count: int | None) -> None:
    assert token_count(sent) == count


def test_odd_counts_are_unknown_and_the_usage_is_kept_as_sent() -> None:
    # Before: 0 for "abc" and -5 (a count nobody sent), 10**25 kept as is (the views'
    # integer casts then failed), and 1e999 never got here (litellm refused the reply).
    sent = json.loads('{"prompt_tokens": 1e999, "completion_tokens": "abc", '
                      '"total_tokens": 10000000000000000000000000, "prompt_tokens_details": '
                      '{"cached_tokens": -5}}')  # fmt: skip
    usage = read_usage({"usage": sent})
    assert (usage.prompt_tokens, usage.completion_tokens) == (None, None)
    assert (usage.total_tokens, usage.cached_tokens) == (None, None)
    assert usage.as_sent == {
        "prompt_tokens": "inf",
        "completion_tokens": "abc",
        "total_tokens": "10000000000000000000000000",
        "prompt_tokens_details": {"cached_tokens": -5},
    }
    # What is recorded can be stored: canonical JSON of the whole call.
    assert "Infinity" not in canonical_json(
        LlmCall(model="m", fingerprint="f", usage=usage).payload()
    )


def test_readable_usage_keeps_no_copy_and_absent_counts_stay_zero() -> None:
    usage = read_usage({"usage": {"prompt_tokens": 10**15, "completion_tokens": 3}})
    assert usage == LlmUsage(prompt_tokens=10**15, completion_tokens=3)
    assert usage.as_sent is None and usage.reasoning_tokens is None
    assert read_usage({}) == LlmUsage()
    payload = LlmCall(model="m", fingerprint="f", usage=usage).payload()
    assert set(payload["usage"]) == {"prompt_tokens", "completion_tokens", "cached_tokens",
                                     "total_tokens"}  # fmt: skip


def test_cache_and_reasoning_counts_openai_and_anthropic_style() -> None:
    openai = {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150,
              "prompt_tokens_details": {"cached_tokens": 40},
              "completion_tokens_details": {"reasoning_tokens": 30}}  # fmt: skip
    read = read_reply(reply(openai, reasoning_content="First, the tests."), [],
                      prompt_tools=False)  # fmt: skip
    assert (read.usage.cached_tokens, read.usage.reasoning_tokens) == (40, 30)
    assert read.usage.cache_creation_tokens is None
    assert read.reasoning_content == "First, the tests." and read.content == "ok"
    assert (read.response_id, read.response_model) == ("chatcmpl-7", "fake-model-2026")
    anthropic = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105,
                 "cache_creation_input_tokens": 60, "cache_read_input_tokens": 20}  # fmt: skip
    read = read_reply(reply(anthropic, reasoning="Plan."), [], prompt_tools=False)
    assert (read.usage.cached_tokens, read.usage.cache_creation_tokens) == (20, 60)
    assert read.reasoning_content == "Plan."


def test_a_copy_as_sent_is_bounded_and_storable() -> None:
    sent = {"a" * 500: "b" * 500, "nested": [[[[[1]]]]], "many": list(range(100)),
            "huge": 2**40_000, "nan": math.nan}  # fmt: skip
    copied = safe_copy(sent)
    assert all(len(key) <= 100 for key in copied)
    assert copied["nested"] == [[[None]]] and len(copied["many"]) == 40
    assert copied["huge"] == "an integer of 40001 bits" and copied["nan"] == "nan"
    canonical_json(copied)  # raises for what no event can hold
