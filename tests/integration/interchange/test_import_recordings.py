"""Imported recordings in a real PostgreSQL: written once through the event store, verified,
seen by the projections and the analytics views, and replayed with no model call.

The recordings are tests/support/foreign_recordings.py's (each format's real serialization,
with NUL, a lone surrogate and a huge output among its outputs).
"""

from __future__ import annotations

import asyncio
import uuid
from decimal import Decimal
from typing import Any

import asyncpg
import pytest

from app.evaluation.rescoring import rescore, suite_tasks
from app.evaluation.scorers import scorer_named
from app.interchange.importers import ImportedSession, read_recording
from app.interchange.importers.writing import ImportConflict, write_session
from app.projections import SessionState, bring_up_to_date
from app.replay import ReplayError, replay
from app.store import EventStore
from tests.support.foreign_recordings import (
    CTF_FLAG,
    HUGE_OUTPUT,
    ODD_OUTPUT,
    OPENHANDS_RESOLVER_OUTPUT,
    SWE_AGENT_CTF,
    as_bytes,
    openhands_chat,
    openhands_events,
    real_recording,
    swe_agent_trajectory,
)


def openhands(events: list[dict[str, Any]] | None = None) -> ImportedSession:
    [session] = read_recording("openhands", "run.json", as_bytes(events or openhands_events()))
    return session


def swe_agent(**kwargs: Any) -> ImportedSession:
    data = as_bytes(swe_agent_trajectory(**kwargs))
    [session] = read_recording("swe-agent", "calc-1.traj", data)
    return session


async def test_an_import_is_written_whole_verified_and_only_once(store: EventStore) -> None:
    session = openhands()
    written = await write_session(store, session)
    assert written.written == len(session.events) and not written.already_present

    recorded = await store.read(session.session_id)
    assert [e.kind for e in recorded] == [e.kind for e in session.events]
    assert [e.payload for e in recorded] == [e.payload() for e in session.events]
    outputs = [e.payload.get("output") for e in recorded if e.kind == "run.output"]
    assert outputs == [ODD_OUTPUT, HUGE_OUTPUT]  # NUL, surrogate and size survive the database
    assert recorded[4].payload["imported"] == {
        "format": "openhands", "file": "run.json", "index": 4, "id": "4", "field": "action"
    }  # fmt: skip
    assert recorded[4].event().imported is not None  # read back as the event's origin
    assert (await store.verify(session.session_id)).ok

    again = await write_session(store, openhands())
    assert again.already_present and again.written == 0
    assert await store.last_seq(session.session_id) == len(session.events)

    # A session of that id holding other events (another importer's) is refused, not mixed.
    other = session.model_copy(
        update={"events": [session.events[0].model_copy(update={"event_id": uuid.uuid4()})]}
    )
    with pytest.raises(ImportConflict, match="already holds 21 events that are not this import"):
        await write_session(store, other)
    assert await store.last_seq(session.session_id) == len(session.events)


async def test_the_prompts_a_recording_holds_are_stored_as_a_live_calls_are(
    store: EventStore,
) -> None:
    session = swe_agent()
    await write_session(store, session)
    [first_call] = [e for e in await store.read(session.session_id) if e.kind == "llm.call"][:1]
    stored = await store.read_messages(first_call.payload["prompt"])
    assert [stored[key]["role"] for key in first_call.payload["prompt"]] == ["system", "user"]
    assert (await store.verify(session.session_id)).ok  # the prompt messages check out too


async def test_imported_sessions_are_in_session_state_and_the_views(
    store: EventStore, superuser: asyncpg.Connection
) -> None:
    oh, swe = openhands(), swe_agent(exit_status="submitted (exit_cost)")
    for session in (oh, swe):
        await write_session(store, session)
    await bring_up_to_date(store, SessionState())
    rows = {
        row["session_id"]: row
        for row in await superuser.fetch(
            "SELECT * FROM session_state WHERE session_id = ANY($1::uuid[])",
            [oh.session_id, swe.session_id],
        )
    }
    row = rows[oh.session_id]
    assert (row["status"], row["agent"], row["runtime"]) == ("finished", "openhands", "imported")
    assert (row["model_calls"], row["priced_calls"], row["unpriced_calls"]) == (5, 4, 1)
    assert row["cost_usd"] == Decimal("0.04")  # what the recording says was spent
    assert (row["input_tokens"], row["cached_tokens"]) == (500, 200)
    assert row["steps"] == 7  # the agent's actions, imported ones included
    assert row["errors"] == 1
    row = rows[swe.session_id]
    assert (row["status"], row["model_calls"], row["unpriced_calls"]) == ("limit", 7, 7)
    assert row["cost_usd"] is None  # unpriced calls are no spend: SWE-agent prices the run

    costs = await superuser.fetchrow(
        "SELECT llm_calls, cost_usd, unpriced_calls FROM session_costs WHERE session_id = $1",
        swe.session_id,
    )
    assert (costs["llm_calls"], costs["cost_usd"], costs["unpriced_calls"]) == (7, None, 7)
    latencies = await superuser.fetch(
        "SELECT latency_ms FROM llm_calls WHERE session_id = $1 ORDER BY seq", oh.session_id
    )
    assert [r["latency_ms"] for r in latencies] == [1500.0, 2250.0, None, None, None]
    usage = await superuser.fetchrow(
        "SELECT llm_calls, latency_p50_ms FROM daily_usage WHERE gen_ai_request_model = $1",
        "gpt-4o-2024-08-06",
    )
    # the percentile of what the recording measured, not pulled down by unknown (0) latencies
    assert (usage["llm_calls"], usage["latency_p50_ms"]) == (5, 1875.0)
    tools = await superuser.fetch(
        "SELECT tool, target, failed FROM tool_calls WHERE session_id = $1 ORDER BY seq",
        oh.session_id,
    )
    assert [(t["tool"], t["target"]) for t in tools] == [
        ("run", "cat calc.py"),
        ("file.edit", "/workspace/calc.py"),
        ("run", "python -m pytest -q"),
    ]
    imported = await superuser.fetch(
        "SELECT payload->'imported'->>'format' AS format, count(*) AS events FROM events "
        "WHERE payload ? 'imported' GROUP BY 1 ORDER BY 1"
    )
    assert [(r["format"], r["events"]) for r in imported] == [
        ("openhands", len(oh.events)),
        ("swe-agent", len(swe.events)),
    ]


async def test_a_positional_replay_of_an_imported_chat_matches_without_a_model(
    store: EventStore,
) -> None:
    """The recorded replies re-served to Chronicle's agent: a text reply is its message (and
    it waits for the user), a finish tool call its finish: the same session, as recorded."""
    session = openhands(openhands_chat())
    await write_session(store, session)
    result = await replay(store, session.session_id, mode="positional")
    assert result.model_calls == 0
    assert (result.steps_recorded, result.steps_served) == (2, 2)
    assert result.divergence is None and result.outcome == "finished"
    # positional: the prompts differ (Chronicle's system prompt; OpenHands kept none)
    assert [d.step for d in result.differences] == [1, 2]
    assert not result.matched
    replayed = await store.read(result.session_id)
    served = [e for e in replayed if "replayed_from" in e.payload]
    assert served and all("imported" not in e.payload for e in replayed)  # copies, not imports


async def test_a_replay_of_an_imported_trajectory_diverges_where_the_agents_differ(
    store: EventStore,
) -> None:
    session = openhands()
    await write_session(store, session)
    result = await replay(store, session.session_id, mode="positional")
    assert result.model_calls == 0
    assert result.steps_served == 3 and result.steps_matched == 0  # every prompt differs
    divergence = result.divergence
    assert divergence is not None and divergence.kind == "action"
    assert divergence.step == 3  # the browser: no tool of Chronicle's agent
    assert divergence.recorded is not None and divergence.recorded["kind"] == "imported"
    assert divergence.new is not None and divergence.new["kind"] == "error"

    strict = await replay(store, session.session_id, mode="strict")
    assert strict.model_calls == 0
    assert strict.divergence is not None and strict.divergence.kind == "request"
    assert strict.divergence.step == 1


async def test_a_replay_of_a_swe_agent_trajectory_reports_its_divergence(
    store: EventStore,
) -> None:
    session = swe_agent()
    await write_session(store, session)
    result = await replay(store, session.session_id, mode="positional")
    assert result.model_calls == 0
    # Calls 1-3 (a command, an edit, a view) are what Chronicle's agent does too; call 4's
    # reply has no action, so Chronicle's agent answers the user and waits where SWE-agent
    # asked its model again.
    divergence = result.divergence
    assert divergence is not None and divergence.kind == "missing_call", divergence
    assert divergence.step == 5 and result.steps_served == 4


async def test_a_scored_import_is_imported_already_and_its_submitted_flag_passes(
    store: EventStore,
) -> None:
    """``eval score`` appends to an imported session; importing the file again recognises the
    import at its start and writes nothing. The flag SWE-agent submitted is the answer."""
    [session] = read_recording("swe-agent", SWE_AGENT_CTF, real_recording(SWE_AGENT_CTF))
    await write_session(store, session)
    scorers = [scorer_named("answer"), scorer_named("finished")]
    [scored] = await rescore(store, [session.session_id], scorers, suite_tasks(None, CTF_FLAG))
    assert scored.error is None and scored.scores["answer"].label == "pass", scored
    grown = await store.last_seq(session.session_id)
    assert grown == len(session.events) + 2

    [again] = read_recording("swe-agent", SWE_AGENT_CTF, real_recording(SWE_AGENT_CTF))
    written = await write_session(store, again)
    assert written.already_present and written.appended_since == 2
    assert await store.last_seq(session.session_id) == grown


async def test_a_recording_the_agent_never_starts_on_is_refused_and_nothing_recorded(
    store: EventStore,
) -> None:
    """An OpenHands trajectory saved without the user's message: the agent would wait for a
    task for ever. The replay is refused before it records anything."""
    events = [event for event in openhands_events() if event.get("source") != "user"]
    session = openhands(events)
    await write_session(store, session)
    before = await store.pool.fetchval("SELECT count(*) FROM events")
    with pytest.raises(ReplayError, match=f"session {session.session_id} cannot be replayed: "):
        await asyncio.wait_for(replay(store, session.session_id, mode="positional"), 30)
    assert await store.pool.fetchval("SELECT count(*) FROM events") == before


async def test_the_resolvers_flat_output_replays_to_its_first_difference(
    store: EventStore,
) -> None:
    """Imported right, OpenHands' older flat output starts Chronicle's agent on its task and
    serves the recorded commands until the agent differs (OpenHands' IPython action)."""
    [session] = read_recording(
        "openhands", OPENHANDS_RESOLVER_OUTPUT, real_recording(OPENHANDS_RESOLVER_OUTPUT)
    )
    await write_session(store, session)
    result = await asyncio.wait_for(replay(store, session.session_id, mode="positional"), 60)
    assert result.model_calls == 0
    assert result.divergence is not None and result.divergence.step == 2
    assert result.divergence.kind == "action"  # run_ipython: no tool of Chronicle's agent
