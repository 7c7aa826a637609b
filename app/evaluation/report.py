"""An evaluation run's report and the comparison of two runs, from its sessions' rows
(``app/evaluation/sql/evaluation_results.py``); pure, so the numbers are tested without a database.

Counting: every session (task x epoch) is one trial. The pass rate is passed sessions over
sessions, which is pass@1 averaged over epochs, with Wilson's 95% interval over the
sessions. ``pass_at_k`` is the share of tasks passed in at least one of their epochs,
``pass_hat_k`` (pass^k) the share passed in every epoch; with one epoch both equal the pass
rate. A session passes when every verdict that counts on it (label pass / fail / error) is a
pass, as ``chronicle eval run`` decides. In a comparison a task counts as passed in a run
when it passed in more than half of its epochs.

Erased and redacted trials (``exclusions.py``) are counted apart: they are in neither the
pass rate, its interval, pass@k, pass^k, nor the task and trial tables, and not failures
either. What the run spent (cost, steps, how sessions ended) still counts every trial whose
events remain.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.evaluation.exclusions import REDACTED, ExcludedTrial, set_apart
from app.evaluation.sql.erased_trials import ErasedSession
from app.evaluation.sql.evaluation_results import EvaluationRow, ReplayRow, RunSections
from app.evaluation.statistics import Interval, difference_interval, wilson_interval

VERDICTS = ("pass", "fail", "error")


def session_passed(labels: dict[str, str | None]) -> bool:
    """At least one verdict, and all of them pass."""
    verdicts = [label for label in labels.values() if label in VERDICTS]
    return bool(verdicts) and all(label == "pass" for label in verdicts)


class SessionResult(BaseModel):
    """One task x epoch (the ``tasks`` entries of ``--json``)."""

    model_config = ConfigDict(frozen=True)

    id: str
    epoch: int
    passed: bool
    session_id: UUID
    status: str | None
    cost_usd: Decimal | None
    steps: int
    ending: str | None = None
    #: scorer name -> the label of its score that counts (pass / fail / error are verdicts)
    verdicts: dict[str, str | None] = {}
    #: why it failed: each verdict that is not a pass with its explanation (None: it passed)
    reason: str | None = None


def failure_reason(
    passed: bool, labels: dict[str, str | None], explanations: dict[str, str | None]
) -> str | None:
    """``check: fail - exit 1; answer: fail - ...``: each verdict that is not a pass, with its
    scorer's explanation; "not scored" for a failed trial with no verdict (None: passed)."""
    if passed:
        return None
    failed = [
        f"{name}: {label}" + (f" - {explanations[name]}" if explanations.get(name) else "")
        for name, label in sorted(labels.items())
        if label in VERDICTS and label != "pass"
    ]
    return "; ".join(failed) or "not scored"


class TaskSummary(BaseModel):
    """One task over its epochs (a row of the per-task table)."""

    model_config = ConfigDict(frozen=True)

    id: str
    epochs: int
    passed: int
    cost_usd: Decimal | None
    steps: int
    session_ids: list[UUID]


class Usage(BaseModel):
    """The ``evaluation_usage`` section: tokens, cost, steps and wall time of the run."""

    model_config = ConfigDict(frozen=True)

    model_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None
    unpriced_sessions: int
    #: the run's cost over its passed trials (None: none passed, or no cost is known)
    cost_per_passed: Decimal | None
    steps: int
    mean_steps: Decimal
    wall_seconds: Decimal
    mean_wall_seconds: Decimal


class Latency(BaseModel):
    """The ``evaluation_latency`` section: the model calls made (served calls excepted)."""

    model_config = ConfigDict(frozen=True)

    model_calls: int
    p50_ms: Decimal
    p95_ms: Decimal


class ToolErrors(BaseModel):
    """The ``evaluation_tool_errors`` section: answered tool calls and the share failed."""

    model_config = ConfigDict(frozen=True)

    tool_calls: int
    failed: int
    error_rate: Decimal | None


class Report(BaseModel):
    """What ``chronicle eval report`` prints: the pass rate and per-task table, then one
    field per section of the report views (None when read without them)."""

    model_config = ConfigDict(frozen=True)

    run: str
    #: the trials that count (``erased`` and ``redacted`` are not among them)
    total: int
    passed: int
    pass_rate: float
    interval: Interval
    epochs: int
    pass_at_k: float
    pass_hat_k: float
    cost_usd: Decimal | None
    #: sessions whose model calls had no price (their cost is left out of ``cost_usd``)
    unpriced_sessions: int
    steps: int
    statuses: dict[str, int]
    task_table: list[TaskSummary]
    tasks: list[SessionResult]
    #: how sessions ended: finished, limit, stuck, error, awaiting_input, interrupted, ...
    endings: dict[str, int] = {}
    usage: Usage | None = None
    latency: Latency | None = None
    tool_errors: ToolErrors | None = None
    #: how often the run was resumed, and the interrupted sessions it ran again
    resumes: int = 0
    rerun_sessions: int = 0
    replays: list[ReplayRow] = []
    #: trials counted apart, outside the pass rate (``exclusions.py``): how many of each
    #: kind, and each with why
    erased: int = 0
    redacted: int = 0
    excluded: list[ExcludedTrial] = []


def build_report(
    run: str,
    rows: Sequence[EvaluationRow],
    sections: RunSections | None = None,
    erased: Sequence[ErasedSession] = (),
) -> Report:
    """The report of a run's sessions (a session not run from a suite is its own task,
    named by its session id), with the sections the report views computed; the trials that
    were erased (``erased``) or cannot be judged for a redaction are counted apart."""
    counted, excluded = set_apart(rows, sections.replays if sections else (), erased)
    spent = [_result(row) for row in rows]
    results = [_result(row) for row in counted]
    results.sort(key=lambda r: (r.epoch, r.id))
    by_task: dict[str, list[SessionResult]] = {}
    for result in sorted(results, key=lambda r: (r.id, r.epoch)):
        by_task.setdefault(result.id, []).append(result)
    table = [
        TaskSummary(
            id=task,
            epochs=len(runs),
            passed=sum(r.passed for r in runs),
            cost_usd=_total(r.cost_usd for r in runs),
            steps=sum(r.steps for r in runs),
            session_ids=[r.session_id for r in runs],
        )
        for task, runs in by_task.items()
    ]
    passed = sum(r.passed for r in results)
    statuses: dict[str, int] = {}
    for result in spent:
        statuses[result.status or "unknown"] = statuses.get(result.status or "unknown", 0) + 1
    return Report(
        run=run,
        total=len(results),
        passed=passed,
        pass_rate=passed / len(results) if results else 0.0,
        interval=wilson_interval(passed, len(results)),
        epochs=max((t.epochs for t in table), default=0),
        pass_at_k=_share(table, lambda t: t.passed > 0),
        pass_hat_k=_share(table, lambda t: t.passed == t.epochs),
        cost_usd=_total(r.cost_usd for r in spent),
        unpriced_sessions=sum(r.cost_usd is None for r in spent),
        steps=sum(r.steps for r in spent),
        statuses=dict(sorted(statuses.items())),
        task_table=table,
        tasks=results,
        erased=sum(e.kind == "erased" for e in excluded),
        redacted=sum(e.kind == "redacted" for e in excluded),
        excluded=excluded,
        **(_sections(sections) if sections is not None else {}),
    )


def _result(row: EvaluationRow) -> SessionResult:
    passed = session_passed(row.labels) if row.passed is None else row.passed
    return SessionResult(
        id=row.task_id or str(row.session_id),
        epoch=row.epoch or 1,
        passed=passed,
        session_id=row.session_id,
        status=row.status,
        cost_usd=row.cost_usd,
        steps=row.steps,
        ending=row.ending,
        verdicts=row.labels,
        reason=failure_reason(passed, row.labels, row.explanations),
    )


def _sections(sections: RunSections) -> dict[str, object]:
    summary = sections.summary
    return {
        "endings": dict(sorted(sections.endings.items())),
        "usage": Usage.model_validate(sections.usage),
        "latency": None if sections.latency is None else Latency.model_validate(sections.latency),
        "tool_errors": None
        if sections.tool_errors is None
        else ToolErrors.model_validate(sections.tool_errors),
        "resumes": int(summary["resumes"] or 0),
        "rerun_sessions": int(summary["rerun_sessions"] or 0),
        "replays": sections.replays,
    }


def _share(table: Sequence[TaskSummary], test: Callable[[TaskSummary], bool]) -> float:
    return sum(1 for t in table if test(t)) / len(table) if table else 0.0


def _total(costs: Iterable[Decimal | None]) -> Decimal | None:
    """The sum of the known costs (None: none was known)."""
    known = [c for c in costs if c is not None]
    return sum(known, Decimal(0)) if known else None


class Comparison(BaseModel):
    """What ``chronicle eval compare A B`` prints: the flip table (task ids), both pass rates
    with their intervals, the difference (B - A) with Newcombe's interval, and the cost and
    step deltas (B - A)."""

    model_config = ConfigDict(frozen=True)

    run_a: str
    run_b: str
    newly_passing: list[str]
    regressed: list[str]
    both: list[str]
    neither: list[str]
    only_a: list[str]
    only_b: list[str]
    pass_rate_a: float
    interval_a: Interval
    pass_rate_b: float
    interval_b: Interval
    difference: float
    difference_interval: Interval
    cost_delta_usd: Decimal | None
    steps_delta: int
    #: per trial (B's mean - A's mean): runs of different sizes compare too
    mean_cost_delta_usd: Decimal | None = None
    mean_steps_delta: Decimal | None = None
    #: when B (or A) is a replay run (``chronicle eval replay``): its replays that diverged
    #: (those stopped at a redacted part are not among them: they are ``excluded``)
    replays: int = 0
    diverged: list[ReplayRow] = []
    #: trials of A and B counted apart, in neither pass rate (erased or redacted)
    excluded: int = 0


def task_passed(task: TaskSummary) -> bool:
    """Passed in more than half of its epochs."""
    return 2 * task.passed > task.epochs


def compare(a: Report, b: Report) -> Comparison:
    """Run B against run A, task by task (tasks are matched by id)."""
    in_a = {t.id: task_passed(t) for t in a.task_table}
    in_b = {t.id: task_passed(t) for t in b.task_table}
    common = sorted(in_a.keys() & in_b.keys())
    cost_delta = None if a.cost_usd is None or b.cost_usd is None else b.cost_usd - a.cost_usd
    return Comparison(
        run_a=a.run,
        run_b=b.run,
        newly_passing=[t for t in common if in_b[t] and not in_a[t]],
        regressed=[t for t in common if in_a[t] and not in_b[t]],
        both=[t for t in common if in_a[t] and in_b[t]],
        neither=[t for t in common if not in_a[t] and not in_b[t]],
        only_a=sorted(in_a.keys() - in_b.keys()),
        only_b=sorted(in_b.keys() - in_a.keys()),
        pass_rate_a=a.pass_rate,
        interval_a=a.interval,
        pass_rate_b=b.pass_rate,
        interval_b=b.interval,
        difference=b.pass_rate - a.pass_rate,
        difference_interval=difference_interval(a.passed, a.total, b.passed, b.total),
        cost_delta_usd=cost_delta,
        steps_delta=b.steps - a.steps,
        mean_cost_delta_usd=_mean_delta(a.cost_usd, a.total, b.cost_usd, b.total),
        mean_steps_delta=_mean_delta(Decimal(a.steps), a.total, Decimal(b.steps), b.total),
        replays=len(a.replays) + len(b.replays),
        diverged=[
            r for r in [*a.replays, *b.replays] if not r.matched and r.divergence_kind != REDACTED
        ],
        excluded=len(a.excluded) + len(b.excluded),
    )


def _mean_delta(
    a: Decimal | None, a_trials: int, b: Decimal | None, b_trials: int
) -> Decimal | None:
    if a is None or b is None or not a_trials or not b_trials:
        return None
    return round(b / b_trials - a / a_trials, 6)
