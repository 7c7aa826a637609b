"""The views answer for every session whatever counts one session's model calls hold: 10^15
tokens, counts no JSON reader holds exactly, strings, negatives, usage that is not an object
(migration 0018). Before, one of them made llm_calls, session_costs, daily_usage and every
export of them fail for everyone (``integer`` casts)."""

from __future__ import annotations

import uuid
from typing import Any

from app.events import LlmCall, SessionCreated, new_event_id
from app.events.canonical import encode
from app.events.llm import LlmResponse, LlmUsage
from app.events.usage import MAX_COUNT
from app.store import EncodedBatch, EventStore
from app.store.analytics import VIEWS, run_query, view_query


def _call(usage: LlmUsage, *, cost: float | None = None, **response: Any) -> LlmCall:
    response_ = LlmResponse(content="ok", finish_reason="stop", **response)
    return LlmCall(
        model="openai/gpt-4o", fingerprint="f" * 64, usage=usage, cost_usd=cost, response=response_
    )


def _as_another_writer(payloads: list[dict[str, Any]]) -> EncodedBatch:
    """llm.call payloads as a writer other than the gateway may have stored them (an older
    Chronicle, an importer): canonical JSON, not validated by the event's model."""
    encoded = [encode(payload) for payload in payloads]
    return EncodedBatch(
        event_ids=[new_event_id() for _ in payloads],
        kinds=["llm.call"] * len(payloads),
        sources=["agent"] * len(payloads),
        causes=[None] * len(payloads),
        payload_texts=[e.text for e in encoded],
        versions=[1] * len(payloads),
        payloads=[e.value for e in encoded],
        blobs={},
    )


def _odd(usage: Any, **fields: Any) -> dict[str, Any]:
    base = _call(LlmUsage()).payload()
    return {**base, "usage": usage, **fields}


async def _sessions(store: EventStore) -> dict[str, uuid.UUID]:
    ids = {name: uuid.uuid4() for name in ("plain", "huge", "odd")}
    for name, session in ids.items():
        await store.append(session, [SessionCreated(title=name)], expected_seq=0)
    await store.append(ids["plain"], [_call(LlmUsage(prompt_tokens=100, completion_tokens=20),
                                            cost=0.001)])  # fmt: skip
    await store.append(
        ids["huge"],
        [
            _call(LlmUsage(prompt_tokens=10**15, completion_tokens=30, cached_tokens=40,
                           cache_creation_tokens=7, reasoning_tokens=11),
                  cost=2.5, id="chatcmpl-9", model="gpt-4o-2024-08-06",
                  reasoning_content="Think first."),
            _call(LlmUsage(prompt_tokens=None, completion_tokens=3,
                           as_sent={"prompt_tokens": "inf"})),
        ],
    )  # fmt: skip
    odd = [
        _odd({"prompt_tokens": "abc", "completion_tokens": 12.5}),
        _odd({"prompt_tokens": -5, "completion_tokens": 2}),
        _odd({"prompt_tokens": 2**80, "completion_tokens": 1}),
        _odd({"prompt_tokens": MAX_COUNT, "completion_tokens": 0}),
        _odd({"prompt_tokens": MAX_COUNT + 1, "completion_tokens": 0}),
        _odd("garbage"),
        _odd(
            {"prompt_tokens": 1},
            params={"max_tokens": 10**20, "temperature": "hot"},
            attempts="x",
            latency_ms="fast",
            cost_usd="free",
        ),
    ]
    await store.append_encoded(ids["odd"], _as_another_writer(odd))
    return ids


async def test_every_view_answers_with_bigint_counts_and_unknown_ones_null(
    store: EventStore, analyst_database_url: str
) -> None:
    ids = await _sessions(store)
    by_name = {session: name for name, session in ids.items()}
    for name in VIEWS:  # what `chronicle export --view` runs, each view whole
        sql, args = view_query(name)
        await run_query(analyst_database_url, sql, args)
    calls = await run_query(
        analyst_database_url,
        """SELECT session_id, seq, gen_ai_usage_input_tokens, gen_ai_usage_output_tokens,
                  gen_ai_usage_cache_read_input_tokens,
                  "gen_ai.usage.input_tokens", "gen_ai.usage.cache_read.input_tokens",
                  "gen_ai.usage.cache_creation.input_tokens",
                  "gen_ai.usage.reasoning.output_tokens", "gen_ai.response.id",
                  "gen_ai.response.model", "error.type", usage_unknown, has_reasoning,
                  gen_ai_request_max_tokens, attempts, latency_ms, cost_usd, replayed_from
           FROM llm_calls ORDER BY session_id, seq""",
    )
    types = {column.name: column.type for column in calls.columns}
    assert types["gen_ai_usage_input_tokens"] == "int8"
    assert types["gen_ai.usage.reasoning.output_tokens"] == "int8"
    rows = {(by_name[row[0]], row[1]): row[2:] for row in calls.rows}
    assert rows["plain", 2][:3] == (100, 20, 0)
    assert rows["huge", 2] == (10**15, 30, 40, 10**15, 40, 7, 11, "chatcmpl-9",
                               "gpt-4o-2024-08-06", None, False, True, None, 1, 0.0, 2.5,
                               None)  # fmt: skip
    assert rows["huge", 3][:2] == (None, 3) and rows["huge", 3][10] is True
    odd = [rows["odd", seq] for seq in range(2, 9)]
    assert [row[0] for row in odd] == [None, None, None, MAX_COUNT, None, 0, 1]
    assert [row[1] for row in odd] == [None, 2, 1, 0, 0, 0, 0]
    assert [row[10] for row in odd] == [True, True, True, False, True, False, False]
    assert odd[6][12:] == (None, None, None, None, None)  # max_tokens .. replayed_from (none)

    costs = await run_query(
        analyst_database_url,
        """SELECT session_id, llm_calls, gen_ai_usage_input_tokens, gen_ai_usage_output_tokens,
                  "gen_ai.usage.cache_creation.input_tokens",
                  "gen_ai.usage.reasoning.output_tokens", unknown_usage_calls, cost_usd
           FROM session_costs""",
    )
    totals = {by_name[row[0]]: row[1:] for row in costs.rows if row[0] in by_name}
    assert totals["plain"] == (1, 100, 20, 0, 0, 0, 0.001)
    assert totals["huge"] == (2, 10**15, 33, 7, 11, 1, 2.5)
    assert totals["odd"] == (7, MAX_COUNT + 1, 3, 0, 0, 4, None)

    [day] = (
        await run_query(
            analyst_database_url,
            """SELECT sum(gen_ai_usage_input_tokens), sum(unknown_usage_calls),
                      sum("gen_ai.usage.cache_creation.input_tokens") FROM daily_usage""",
        )
    ).rows
    assert day == (100 + 10**15 + MAX_COUNT + 1, 5, 7)
