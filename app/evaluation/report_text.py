"""A report and a comparison as the terminal shows them (``--json`` prints the models)."""

from __future__ import annotations

from decimal import Decimal

from app.evaluation.report import Comparison, Report
from app.evaluation.statistics import Interval
from app.sessions.summary import UNKNOWN_COST


def _rate(rate: float, interval: Interval) -> str:
    confidence = f"{interval.confidence:.0%}"
    return f"{rate:.1%} ({confidence} CI {interval.low:.1%} to {interval.high:.1%})"


def _usd(cost: Decimal | None) -> str:
    return UNKNOWN_COST if cost is None else f"${cost.normalize():f}"


def _signed(value: Decimal) -> str:
    """``+0``, ``-0.002``: no trailing zeros (a zero's exponent would print some)."""
    return "+0" if value == 0 else f"{value.normalize():+f}"


def excluded_summary(report: Report) -> str | None:
    """``not counted: 1 erased, 2 redacted ...`` (None: every trial counts)."""
    if not report.excluded:
        return None
    kinds = ", ".join(
        f"{n} {kind}" for kind, n in (("erased", report.erased), ("redacted", report.redacted)) if n
    )
    return (
        f"not counted: {kinds} (in neither the pass rate nor the failures: nothing says "
        "whether they passed)"
    )


def excluded_lines(report: Report) -> list[str]:
    """The summary of the trials counted apart, then one line each with why."""
    summary = excluded_summary(report)
    if summary is None:
        return []
    lines = [summary]
    for trial in report.excluded:
        which = f"{trial.task_id} epoch {trial.epoch}" if trial.task_id is not None else "a trial"
        lines.append(f"  {which} ({trial.kind}, session {trial.session_id}): {trial.note}")
    return lines


def report_lines(report: Report) -> list[str]:
    """The summary, the trials counted apart, the per-task table and the totals."""
    lines = [
        f"{report.run}: {report.passed} of {report.total} sessions passed, "
        f"pass rate {_rate(report.pass_rate, report.interval)}",
        *excluded_lines(report),
    ]
    if report.epochs > 1:
        lines.append(
            f"epochs: {report.epochs}; the pass rate is pass@1 averaged over epochs "
            f"(each task x epoch a trial); pass@{report.epochs} {report.pass_at_k:.1%}, "
            f"pass^{report.epochs} {report.pass_hat_k:.1%}"
        )
    width = max([4, *(len(t.id) for t in report.task_table)])
    lines.append("")
    lines.append(f"{'task':<{width}}  epochs  passed  {'cost':>10}  {'steps':>5}  sessions")
    for task in report.task_table:
        sessions = " ".join(str(s) for s in task.session_ids)
        lines.append(
            f"{task.id:<{width}}  {task.epochs:>6}  {task.passed:>6}  "
            f"{_usd(task.cost_usd):>10}  {task.steps:>5}  {sessions}"
        )
    unpriced = (
        f" ({report.unpriced_sessions} sessions unpriced)" if report.unpriced_sessions else ""
    )
    facts = section_facts(report)
    if facts:  # the report views' sections
        return [*lines, "", *(f"{name}: {value}" for name, value in facts)]
    ended = ", ".join(f"{status} {n}" for status, n in report.statuses.items())
    return [*lines, "", f"cost {_usd(report.cost_usd)}{unpriced}, steps {report.steps}; "
            f"ended: {ended}"]  # fmt: skip


def section_facts(report: Report) -> list[tuple[str, str]]:
    """The report views' sections, one fact a line (empty when read without them)."""
    facts: list[tuple[str, str]] = []
    if report.endings:
        facts.append(("endings", ", ".join(f"{k} {n}" for k, n in report.endings.items())))
    usage = report.usage
    unpriced = (
        f" ({report.unpriced_sessions} sessions unpriced)" if report.unpriced_sessions else ""
    )
    if usage is not None:
        facts += [
            ("tokens", f"{usage.input_tokens} in, {usage.output_tokens} out "
                       f"({usage.model_calls} model calls)"),
            ("cost", f"{_usd(usage.cost_usd)}{unpriced}, per passed trial "
                     f"{_usd(usage.cost_per_passed)}"),
            ("steps", f"{usage.steps} (mean {usage.mean_steps:f})"),
            ("wall time", f"{usage.wall_seconds:.3f} s (mean {usage.mean_wall_seconds:f} s)"),
        ]  # fmt: skip
    if report.latency is not None:
        latency = report.latency
        facts.append(("model latency", f"p50 {latency.p50_ms:f} ms, p95 {latency.p95_ms:f} ms"))
    if report.tool_errors is not None:
        tools = report.tool_errors
        rate = "-" if tools.error_rate is None else f"{tools.error_rate:.1%}"
        facts.append(("tool errors", f"{tools.failed} of {tools.tool_calls} ({rate})"))
    if report.resumes:
        facts.append(("resumed", f"{report.resumes} times, {report.rerun_sessions} interrupted "
                                 "sessions run again"))  # fmt: skip
    if report.replays:
        matched = sum(r.matched for r in report.replays)
        stopped = sum(r.divergence_kind == "redacted" for r in report.replays)
        redacted = f", {stopped} stopped at a redacted part" if stopped else ""
        facts.append(("replays", f"{matched} of {len(report.replays)} matched{redacted}"))
    return facts


def report_markdown(report: Report) -> str:
    """The report as Markdown: the summary, a per-task table, the sections as a list."""
    lines = [
        f"# Evaluation run `{report.run}`",
        "",
        f"{report.passed} of {report.total} trials passed: pass rate "
        f"{_rate(report.pass_rate, report.interval)}; pass@{report.epochs} "
        f"{report.pass_at_k:.1%}, pass^{report.epochs} {report.pass_hat_k:.1%}.",
        *(["", f"{excluded_summary(report)}."] if report.excluded else []),
        "",
        "| task | epochs | passed | cost | steps |",
        "|---|---:|---:|---:|---:|",
    ]
    for task in report.task_table:
        lines.append(
            f"| {task.id} | {task.epochs} | {task.passed} | {_usd(task.cost_usd)} | {task.steps} |"
        )
    facts = section_facts(report)
    if facts:
        lines += ["", *(f"- **{name}**: {value}" for name, value in facts)]
    return "\n".join(lines)


def comparison_lines(comparison: Comparison) -> list[str]:
    """Both pass rates, their difference and the flip table."""
    a, b = comparison.run_a, comparison.run_b
    difference = comparison.difference_interval
    delta = comparison.cost_delta_usd
    cost = UNKNOWN_COST if delta is None else f"{_signed(delta)} USD"
    mean_cost = comparison.mean_cost_delta_usd
    mean_steps = comparison.mean_steps_delta
    lines = [
        f"A {a}: pass rate {_rate(comparison.pass_rate_a, comparison.interval_a)}",
        f"B {b}: pass rate {_rate(comparison.pass_rate_b, comparison.interval_b)}",
        f"B - A: {comparison.difference:+.1%} ({difference.confidence:.0%} CI "
        f"{difference.low:+.1%} to {difference.high:+.1%}); cost {cost}, "
        f"steps {comparison.steps_delta:+d}",
        "per trial: cost "
        + (UNKNOWN_COST if mean_cost is None else f"{_signed(mean_cost)} USD")
        + ", steps "
        + ("-" if mean_steps is None else _signed(mean_steps)),
        "",
    ]
    for title, tasks in (
        ("newly passing (failed in A, passed in B)", comparison.newly_passing),
        ("regressed (passed in A, failed in B)", comparison.regressed),
        ("both passed", comparison.both),
        ("neither passed", comparison.neither),
        (f"only in A ({a})", comparison.only_a),
        (f"only in B ({b})", comparison.only_b),
    ):
        if tasks or not title.startswith("only"):
            lines.append(f"{title}: {len(tasks)}" + (f"  {' '.join(tasks)}" if tasks else ""))
    if comparison.excluded:
        lines.append(
            f"not counted: {comparison.excluded} trials erased or redacted (in neither pass rate)"
        )
    if comparison.replays:
        lines.append(
            f"replays: {len(comparison.diverged)} of {comparison.replays} diverged"
            + "".join(
                f"\n  {r.task_id} epoch {r.epoch}: step {r.divergence_step} "
                f"({r.divergence_kind}) {r.divergence}"
                for r in comparison.diverged
            )
        )
    return lines
