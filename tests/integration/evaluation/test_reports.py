"""Reports and comparisons over recorded sessions in a real PostgreSQL: the scores that
count are the newest per scorer (of its highest version), sessions of other runs are left
out, and two runs give the known flips."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from app.evaluation.report import compare
from app.evaluation.reporting import ReportError, run_report
from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Task
from app.events import AgentState, EvalScore, Event, Finish, LlmCall, Message, SessionCreated
from app.store import EventStore


async def session(
    store: EventStore, run: str, task: str, epoch: int, *scores: tuple[str, int, str | None],
    cost: float = 0.5, end: str = "finished",
) -> uuid.UUID:  # fmt: skip
    """A recorded session of ``run`` with its ``eval.score`` events (name, version, label)."""
    events: list[Event] = [
        SessionCreated(config=evaluation_config(run, Task(id=task, prompt="p"), epoch)),
        Message(content="p"),
        LlmCall(model="m", fingerprint="f", cost_usd=cost),
    ]
    if end == "finished":
        events.append(Finish(message="done", cause=3))
    events.append(AgentState(state=end, reason="" if end == "finished" else "the limit"))
    events += [
        EvalScore(name=name, scorer_version=version, score_label=label,
                  score_value=None if label is None else float(label == "pass"),
                  explanation="e", scored_seq=len(events), evaluation_run=run)
        for name, version, label in scores
    ]  # fmt: skip
    session_id = uuid.uuid4()
    await store.append(session_id, events, expected_seq=0)
    return session_id


async def test_the_report_counts_the_newest_score_of_each_scorer(store: EventStore) -> None:
    a1 = await session(store, "nightly", "a", 1, ("finished", 1, "pass"))
    # re-scored: the newer fail counts
    b1 = await session(store, "nightly", "b", 1, ("finished", 1, "pass"), ("finished", 1, "fail"))
    # a newer version counts over an older one recorded after it
    c1 = await session(store, "nightly", "c", 1, ("check", 2, "pass"), ("check", 1, "fail"))
    a2 = await session(store, "nightly", "a", 2, ("finished", 1, "pass"), ("cost", 1, None),
                       cost=0.25)  # fmt: skip
    b2 = await session(store, "nightly", "b", 2, ("finished", 1, "fail"), end="stopped")
    c2 = await session(store, "nightly", "c", 2)  # never scored: no verdict, not passed
    await session(store, "weekly", "a", 1, ("finished", 1, "fail"))

    report = await run_report(store, "nightly")
    assert (report.total, report.passed, report.epochs) == (6, 3, 2)
    assert report.pass_rate == 0.5
    assert report.interval.low == pytest.approx(0.1876, abs=5e-5)
    assert report.interval.high == pytest.approx(0.8124, abs=5e-5)
    assert (report.pass_at_k, report.pass_hat_k) == (pytest.approx(2 / 3), pytest.approx(1 / 3))
    assert [(t.id, t.epoch, t.passed, t.session_id) for t in report.tasks] == [
        ("a", 1, True, a1), ("b", 1, False, b1), ("c", 1, True, c1),
        ("a", 2, True, a2), ("b", 2, False, b2), ("c", 2, False, c2),
    ]  # fmt: skip
    assert [(t.id, t.epochs, t.passed, t.session_ids) for t in report.task_table] == [
        ("a", 2, 2, [a1, a2]), ("b", 2, 0, [b1, b2]), ("c", 2, 1, [c1, c2]),
    ]  # fmt: skip
    assert report.cost_usd == Decimal("2.75")
    assert report.steps == 5  # one finish in each session that finished
    assert report.statuses == {"finished": 5, "stopped": 1}


async def test_two_runs_compare_with_known_flips(store: EventStore) -> None:
    for task, before, after in (("keeps", "pass", "pass"), ("breaks", "pass", "fail"),
                                ("fixed", "fail", "pass"), ("never", "fail", "fail")):  # fmt: skip
        await session(store, "before", task, 1, ("finished", 1, before))
        await session(store, "after", task, 1, ("finished", 1, after), cost=1.0)
    comparison = compare(await run_report(store, "before"), await run_report(store, "after"))
    assert (comparison.newly_passing, comparison.regressed) == (["fixed"], ["breaks"])
    assert (comparison.both, comparison.neither) == (["keeps"], ["never"])
    assert (comparison.pass_rate_a, comparison.pass_rate_b, comparison.difference) == (
        0.5, 0.5, 0.0,
    )  # fmt: skip
    assert comparison.cost_delta_usd == Decimal("2.0")


async def test_an_unknown_run_is_refused(store: EventStore) -> None:
    with pytest.raises(ReportError, match="no evaluation run is named 'nope'"):
        await run_report(store, "nope")
