"""An API run's trial is scored once however many scorers reach it: the worker whose run
ended and any worker's sweep may both call ``score_trial`` (real PostgreSQL).

Before, ``score_trial`` appended the default scores through ``score_session``, which on an
expected-seq conflict read the session again and appended its scores again: two calls at once,
or one after another, recorded two sets (the Counter below saw each name twice)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

from app.config import Settings
from app.evaluation.api_runs import RunPlan, score_trial
from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Suite, Task
from app.events import AgentState, Message, SessionCreated
from app.store import EventStore

TASK = Task(id="six-sevens", prompt="What is six times seven?", answer="42")


def plan() -> RunPlan:
    return RunPlan(
        name="once", suite=Suite(name="once", tasks=[TASK]), model="openai/scripted",
        base_url=None, runtime="local", trials=1, concurrency=1, owner=uuid.uuid4(), user="ada",
    )  # fmt: skip


async def ended_trial(store: EventStore, state: str = "finished") -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(
        session,
        [
            SessionCreated(title=TASK.prompt, config=evaluation_config("once", TASK, 1)),
            Message(content=TASK.prompt, source="user"),
            AgentState(state=state, reason="done"),
        ],
        expected_seq=0,
    )
    return session


async def score_names(store: EventStore, session: uuid.UUID) -> Counter[str]:
    events = await store.read(session)
    return Counter(event.payload["name"] for event in events if event.kind == "eval.score")


async def test_two_scorers_at_once_record_one_set_of_scores(
    store: EventStore, settings: Settings
) -> None:
    session = await ended_trial(store)
    recorded = await asyncio.gather(*(score_trial(store, settings, plan(), session) for _ in "ab"))
    assert sorted(recorded) == [False, True]
    names = await score_names(store, session)
    assert names["finished"] == 1 and set(names.values()) == {1}, names


async def test_a_trial_scored_already_is_not_scored_again(
    store: EventStore, settings: Settings
) -> None:
    session = await ended_trial(store)
    assert await score_trial(store, settings, plan(), session) is True
    first = await score_names(store, session)
    assert await score_trial(store, settings, plan(), session) is False
    assert await score_names(store, session) == first


async def test_a_trial_that_has_not_ended_is_not_scored(
    store: EventStore, settings: Settings
) -> None:
    session = await ended_trial(store, state="paused")
    assert await score_trial(store, settings, plan(), session) is False
    assert await score_names(store, session) == Counter()
