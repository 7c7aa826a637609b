"""The terminal form of a report and a comparison: how epochs are counted is said, and the
flip table names its tasks."""

from __future__ import annotations

import uuid
from decimal import Decimal

from app.evaluation.report import build_report, compare
from app.evaluation.report_text import comparison_lines, report_lines
from app.evaluation.sql.evaluation_results import EvaluationRow


def row(task: str, epoch: int, label: str) -> EvaluationRow:
    return EvaluationRow(session_id=uuid.uuid4(), task_id=task, epoch=epoch, status="finished",
                         steps=3, cost_usd=Decimal("0.5"), labels={"check": label})  # fmt: skip


def test_a_report_with_epochs_says_how_they_are_counted() -> None:
    report = build_report("nightly", [row("hello", 1, "pass"), row("fix", 1, "fail"),
                                      row("hello", 2, "pass"), row("fix", 2, "pass")])  # fmt: skip
    lines = report_lines(report)
    assert lines[0] == "nightly: 3 of 4 sessions passed, pass rate 75.0% (95% CI 30.1% to 95.4%)"
    assert lines[1] == (
        "epochs: 2; the pass rate is pass@1 averaged over epochs (each task x epoch a trial); "
        "pass@2 100.0%, pass^2 50.0%"
    )
    assert lines[4].split()[:5] == ["fix", "2", "1", "$1", "6"]
    assert lines[-1] == "cost $2, steps 12; ended: finished 4"


def test_a_comparison_names_the_flipped_tasks() -> None:
    a = build_report("a", [row("hello", 1, "pass"), row("fix", 1, "fail")])
    b = build_report("b", [row("hello", 1, "fail"), row("fix", 1, "pass"), row("new", 1, "pass")])
    lines = comparison_lines(compare(a, b))
    assert lines[2].startswith("B - A: +16.7% (95% CI ")
    assert lines[3] == "per trial: cost +0 USD, steps +0"
    assert lines[5:] == [
        "newly passing (failed in A, passed in B): 1  fix",
        "regressed (passed in A, failed in B): 1  hello",
        "both passed: 0",
        "neither passed: 0",
        "only in B (b): 1  new",
    ]
