"""A trial's session summary says its run, task, epoch and verdict (the session page's
breadcrumb and pass/fail badge): a failed trial is ``passed: false`` whatever state it ended
in, the newest score of a scorer's highest version counts, an unscored trial is ``None``, and a
session of no run has no ``trial``."""

from __future__ import annotations

import uuid

from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Task
from app.evaluation.trial_facts import with_trial
from app.events import AgentState, EvalScore, Event, Finish, Message, SessionCreated
from app.projections import SessionState, bring_up_to_date
from app.sessions.sql.session_owners import visible_session
from app.sessions.summary import SessionSummary
from app.store import EventStore


def score(name: str, label: str, version: int = 1) -> EvalScore:
    return EvalScore(name=name, scorer_version=version, score_label=label, score_value=0.0,
                     explanation="e", scored_seq=4, evaluation_run="nightly")  # fmt: skip


async def summary(store: EventStore, events: list[Event]) -> SessionSummary:
    session = uuid.uuid4()
    await store.append(session, events, expected_seq=0)
    await bring_up_to_date(store, SessionState())
    row = await visible_session(store, session, owner=None)
    assert row is not None
    return await with_trial(store, SessionSummary.of(row))


def ran() -> list[Event]:
    """A trial that finished (new events each time: an event's id is its own)."""
    return [
        SessionCreated(config=evaluation_config("nightly", Task(id="fix", prompt="p"), 2)),
        Message(content="p"),
        Finish(message="done"),
        AgentState(state="finished"),
    ]


async def test_a_trial_says_its_run_task_epoch_and_verdict(store: EventStore) -> None:
    failed = await summary(store, [*ran(), score("finished", "pass"), score("check", "fail")])
    assert failed.state == "finished"
    assert failed.trial is not None
    assert (failed.trial.run, failed.trial.name, failed.trial.task, failed.trial.epoch) == (
        "nightly", "nightly", "fix", 2,
    )  # fmt: skip
    assert failed.trial.passed is False
    assert failed.trial.verdicts == {"finished": "pass", "check": "fail"}

    # a newer version of check passes it; an older version's later fail does not count
    rescored = [score("finished", "pass"), score("check", "fail"), score("check", "pass", 2)]
    passed = await summary(store, [*ran(), *rescored, score("check", "fail")])
    assert passed.trial is not None and passed.trial.passed is True

    unscored = await summary(store, ran())
    assert unscored.trial is not None and unscored.trial.passed is None

    plain = await summary(store, [SessionCreated(config={}), Message(content="hi")])
    assert plain.trial is None
