"""Trials counted apart, as pure code: which rows are set apart and why, the pass rate and its
interval over the rest, what the run spent over every row, and a run whose every trial was
erased."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from app.evaluation.exclusions import redacted_verdicts, set_apart
from app.evaluation.report import build_report
from app.evaluation.report_text import report_lines
from app.evaluation.sql.erased_trials import ErasedSession
from app.evaluation.sql.evaluation_results import EvaluationRow, ReplayRow, RunSections

#: A redacted label as the report views read it: its marker's JSON text.
REDACTED_LABEL = json.dumps({"was": "string", "$redacted": "ab" * 32})
GONE = ErasedSession(session_id=uuid.uuid4(), erased_at=datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
                     erased_by="ops", policy="keep 90 days")  # fmt: skip


def row(task: str, label: str, cost: str = "1") -> EvaluationRow:
    return EvaluationRow(session_id=uuid.uuid4(), task_id=task, epoch=1, status="finished",
                         steps=3, cost_usd=Decimal(cost), labels={"finished": label},
                         passed=label == "pass")  # fmt: skip


def replay(of: EvaluationRow, kind: str | None) -> ReplayRow:
    return ReplayRow(task_id=str(of.task_id), epoch=1, session_id=of.session_id,
                     replay_of=uuid.uuid4(), matched=kind is None,
                     divergence_step=None if kind is None else 2, divergence_kind=kind,
                     divergence=None if kind is None else f"model call 2: {kind}")  # fmt: skip


def test_a_redacted_label_is_told_from_a_label_that_looks_like_json() -> None:
    assert redacted_verdicts({"finished": REDACTED_LABEL, "check": "pass", "cost": None}) == [
        "finished"
    ]
    assert redacted_verdicts({"answer": '{"$redacted": "not a digest"}', "x": "{oops"}) == []


def test_erased_and_redacted_trials_are_outside_the_rate_and_inside_the_spend() -> None:
    rows = [row("a", "pass"), row("b", "fail"), row("c", REDACTED_LABEL, cost="2"),
            row("d", "fail"), row("e", "pass")]  # fmt: skip
    replays = [replay(rows[3], "redacted"), replay(rows[4], None), replay(rows[1], "request")]
    counted, excluded = set_apart(rows, replays, [GONE])
    assert [r.task_id for r in counted] == ["a", "b", "e"]
    assert [(e.kind, e.task_id) for e in excluded] == [
        ("erased", None), ("redacted", "c"), ("redacted", "d")
    ]  # fmt: skip
    assert excluded[2].note == "its replay cannot go on: model call 2: redacted"

    sections = RunSections(summary={"resumes": 0, "rerun_sessions": 0}, endings={},
                           usage={"model_calls": 0, "input_tokens": 0, "output_tokens": 0,
                                  "cost_usd": None, "unpriced_sessions": 0,
                                  "cost_per_passed": None, "steps": 15, "mean_steps": 3,
                                  "wall_seconds": 1, "mean_wall_seconds": 0.2},
                           latency=None, tool_errors=None, replays=replays)  # fmt: skip
    report = build_report("r", rows, sections, [GONE])
    assert (report.total, report.passed, report.erased, report.redacted) == (3, 2, 1, 2)
    assert report.pass_rate == pytest.approx(2 / 3)
    assert report.interval.low == pytest.approx(0.2077, abs=5e-5)  # Wilson's, over 3 trials
    assert (report.cost_usd, report.steps) == (Decimal("6"), 15)  # every row's spend
    assert report_lines(report)[2] == (
        f"  a trial (erased, session {GONE.session_id}): erased 2026-12-01 09:30 UTC by ops "
        "under the policy 'keep 90 days'"
    )


def test_a_run_whose_every_trial_was_erased_reports_nothing_counted() -> None:
    report = build_report("r", [], None, [GONE])
    assert (report.total, report.passed, report.pass_rate, report.erased) == (0, 0, 0.0, 1)
    assert report_lines(report)[:2] == [
        "r: 0 of 0 sessions passed, pass rate 0.0% (95% CI 0.0% to 100.0%)",
        "not counted: 1 erased (in neither the pass rate nor the failures: nothing says "
        "whether they passed)",
    ]
