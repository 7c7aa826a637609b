"""A run's report and the comparison of two runs, built from session rows as the store
returns them: known counts give known rates, intervals, totals and flips."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from app.evaluation.report import build_report, compare, session_passed
from app.evaluation.sql.evaluation_results import EvaluationRow

PASS = {"finished": "pass", "answer": "pass", "cost": None, "steps": None}
FAIL = {"finished": "pass", "answer": "fail", "cost": None, "steps": None}


def row(task: str, epoch: int, labels: dict[str, str | None], cost: str | None = "0.5",
        steps: int = 2, status: str = "finished") -> EvaluationRow:  # fmt: skip
    return EvaluationRow(
        session_id=uuid.uuid4(), task_id=task, epoch=epoch, status=status, steps=steps,
        cost_usd=None if cost is None else Decimal(cost), labels=labels,
    )  # fmt: skip


def test_a_session_passes_when_every_verdict_passes() -> None:
    assert session_passed(PASS)
    assert not session_passed(FAIL)
    assert not session_passed({"check": "error", "finished": "pass"})
    assert not session_passed({"cost": None, "steps": None})  # measures are no verdict


def test_report_of_ten_sessions_with_eight_passed() -> None:
    rows = [row(f"t{i}", 1, PASS) for i in range(8)]
    rows += [row("t8", 1, FAIL, cost=None), row("t9", 1, FAIL, status="limit", steps=5)]
    report = build_report("nightly", rows)
    assert (report.total, report.passed, report.pass_rate) == (10, 8, 0.8)
    assert report.interval.low == pytest.approx(0.4902, abs=5e-5)
    assert report.interval.high == pytest.approx(0.9433, abs=5e-5)
    assert (report.epochs, report.pass_at_k, report.pass_hat_k) == (1, 0.8, 0.8)
    assert (report.cost_usd, report.unpriced_sessions, report.steps) == (Decimal("4.5"), 1, 23)
    assert report.statuses == {"finished": 9, "limit": 1}
    assert [(t.id, t.epoch, t.passed, t.session_id) for t in report.tasks] == [
        (r.task_id, 1, i < 8, r.session_id) for i, r in enumerate(rows)
    ]


def test_epochs_count_as_trials_and_pass_at_k_and_pass_hat_k_are_per_task() -> None:
    rows = [
        row("a", 1, PASS), row("a", 2, PASS), row("a", 3, PASS),
        row("b", 1, PASS), row("b", 2, FAIL), row("b", 3, FAIL),
        row("c", 1, FAIL), row("c", 2, FAIL), row("c", 3, FAIL, cost=None),
    ]  # fmt: skip
    report = build_report("r", rows)
    assert (report.total, report.passed) == (9, 4)
    assert report.pass_rate == pytest.approx(4 / 9)
    assert (report.pass_at_k, report.pass_hat_k) == (pytest.approx(2 / 3), pytest.approx(1 / 3))
    assert [(t.id, t.epochs, t.passed, t.cost_usd, t.steps) for t in report.task_table] == [
        ("a", 3, 3, Decimal("1.5"), 6),
        ("b", 3, 1, Decimal("1.5"), 6),
        ("c", 3, 0, Decimal("1.0"), 6),
    ]
    assert report.task_table[1].session_ids == [r.session_id for r in rows[3:6]]
    assert [(t.id, t.epoch) for t in report.tasks][:3] == [("a", 1), ("b", 1), ("c", 1)]


def test_an_empty_run_reports_nothing_known() -> None:
    report = build_report("empty", [])
    assert (report.total, report.pass_rate, report.cost_usd) == (0, 0.0, None)
    assert (report.interval.low, report.interval.high) == (0.0, 1.0)


def test_compare_sorts_tasks_into_the_flip_table() -> None:
    a = build_report("a", [row("both", 1, PASS), row("regress", 1, PASS),
                           row("fixed", 1, FAIL), row("never", 1, FAIL),
                           row("dropped", 1, PASS)])  # fmt: skip
    b = build_report("b", [row("both", 1, PASS), row("regress", 1, FAIL, steps=4),
                           row("fixed", 1, PASS, cost="1.5"), row("never", 1, FAIL),
                           row("added", 1, FAIL)])  # fmt: skip
    comparison = compare(a, b)
    assert comparison.newly_passing == ["fixed"]
    assert comparison.regressed == ["regress"]
    assert comparison.both == ["both"]
    assert comparison.neither == ["never"]
    assert (comparison.only_a, comparison.only_b) == (["dropped"], ["added"])
    assert (comparison.pass_rate_a, comparison.pass_rate_b) == (0.6, 0.4)
    assert comparison.difference == pytest.approx(-0.2)
    assert comparison.difference_interval.low < -0.2 < comparison.difference_interval.high
    assert (comparison.cost_delta_usd, comparison.steps_delta) == (Decimal("1.0"), 2)


def test_with_epochs_a_task_passes_a_run_in_more_than_half_of_them() -> None:
    a = build_report("a", [row("t", 1, PASS), row("t", 2, FAIL)])  # a tie: not passed
    b = build_report("b", [row("t", 1, PASS), row("t", 2, PASS), row("t", 3, FAIL)])
    assert compare(a, b).newly_passing == ["t"]
    assert compare(b, a).regressed == ["t"]


def test_each_failed_trial_says_why_in_its_verdicts_words() -> None:
    failed = row("t", 1, {"finished": "pass", "check": "fail", "answer": "error", "cost": None})
    failed = failed.model_copy(
        update={"explanations": {"check": "exit 1", "answer": None, "finished": "called finish"}}
    )
    unscored = row("u", 1, {"cost": None, "steps": None})
    report = build_report("nightly", [row("p", 1, PASS), failed, unscored])
    reasons = {t.id: t.reason for t in report.tasks}
    assert reasons == {"p": None, "t": "answer: error; check: fail - exit 1", "u": "not scored"}
    assert report.tasks[1].verdicts["check"] == "fail"
