"""`chronicle eval score RUN|SESSION...`: score recorded sessions again, without the model.

Exit codes: 0 when every session was scored, 1 when one could not be (the others are scored
and printed), 2 for options that cannot be used (an unknown scorer, a bad suite).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from app.cli.log import open_store, positive
from app.config import Settings

if TYPE_CHECKING:
    from app.evaluation.rescoring import ScoredResult


def add_parser(commands: argparse._SubParsersAction) -> None:
    evaluation = commands.add_parser(
        "eval", help="offline evaluation: score recorded sessions (see the README's Evaluation)"
    )
    actions = evaluation.add_subparsers(dest="eval_command", required=True, metavar="ACTION")
    score = actions.add_parser(
        "score",
        help="score recorded sessions again (no model calls), appending eval.score events",
        description="Score each session named, or each session of the evaluation run named, "
        "and record every score as an eval.score event on the session. Old scores stay in "
        "the log; the newest per scorer and version counts.",
    )
    score.add_argument(
        "targets", nargs="+", metavar="RUN|SESSION", help="an evaluation run's name or a session id"
    )
    score.add_argument(
        "--scorer",
        action="append",
        default=[],
        metavar="NAME",
        help="finished, answer, cost, steps (default: these four), check (the task's check "
        "on the recorded final workspace, in a fresh sandbox), or your own as "
        "package.module:NAME; repeatable",
    )
    score.add_argument(
        "--suite",
        type=Path,
        metavar="FILE",
        help="judge against this suite's tasks (matched by the task id each session recorded) "
        "instead of the tasks as recorded",
    )
    score.add_argument(
        "--answer",
        metavar="EXPECTED",
        help="the expected answer for sessions that were not run from a suite (exact, or "
        "regex: / contains: prefixed)",
    )
    score.add_argument("--json", action="store_true", help="one JSON object per session")

    run = actions.add_parser(
        "run",
        help="run every task x epoch of a suite as a recorded session, then score each",
        description="Run each task of the suite (epochs times) as an ordinary recorded "
        "session tagged with the evaluation run, at most N at a time, with a progress line "
        "on stderr, then score it (finished, answer, cost, steps).",
    )
    run.add_argument("suite", type=Path, metavar="SUITE", help="the suite's YAML file")
    run.add_argument("--model", help="the model (default: the configured llm_model)")
    run.add_argument("--base-url", help="the model server's URL (default: llm_base_url)")
    run.add_argument("--runtime", choices=["local", "docker"], help="the sandbox runtime")
    run.add_argument("--epochs", type=positive, default=1, metavar="K", help="runs per task")
    run.add_argument(
        "--concurrency", type=positive, default=1, metavar="N", help="sessions at once"
    )
    run.add_argument("--name", help="the run's name (default: the suite's name and the time)")
    run.add_argument("--json", action="store_true", help="print the results as JSON")


async def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.eval_command == "run":
        return await run_suite_command(args, settings)
    return await score(args, settings)


async def run_suite_command(args: argparse.Namespace, settings: Settings) -> int:
    from app.evaluation.running import Progress, RunError, RunOptions, run_suite
    from app.evaluation.scorers import BUILTIN, DEFAULT_SCORERS
    from app.evaluation.suite import SuiteError, load_suite

    try:
        suite = load_suite(args.suite)
    except SuiteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    name = args.name or f"{suite.name}-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    options = RunOptions(
        name=name, epochs=args.epochs, concurrency=args.concurrency, model=args.model,
        base_url=args.base_url, runtime=args.runtime,
    )  # fmt: skip

    def show(progress: Progress) -> None:
        end = "\n" if progress.done == progress.total else ""
        print(f"\r{name} {progress.line()}", end=end, file=sys.stderr, flush=True)

    async with await open_store(settings) as store:
        try:
            results = await run_suite(
                store, settings, suite, args.suite.resolve().parent, options,
                [BUILTIN[n] for n in DEFAULT_SCORERS], show,
            )  # fmt: skip
        except RunError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    passed = sum(r.passed for r in results)
    if args.json:
        print(json.dumps({
            "name": name, "total": len(results), "passed": passed,
            "pass_rate": passed / len(results),
            "tasks": [r.model_dump(mode="json") for r in results],
        }))  # fmt: skip
    else:
        for r in results:
            verdict = "pass" if r.passed else "fail"
            why = f"  {r.error}" if r.error else ""
            print(f"{r.task_id} epoch {r.epoch}  {verdict}  {r.outcome}  {r.session_id}{why}")
        print(f"{name}: {passed} of {len(results)} passed")
    return 0


async def score(args: argparse.Namespace, settings: Settings) -> int:
    from app.evaluation.rescoring import check_sessions, rescore, sessions_to_score, suite_tasks
    from app.evaluation.scorers import DEFAULT_SCORERS, scorer_named
    from app.evaluation.scoring import ScoringError
    from app.evaluation.suite import SuiteError, Task, load_suite

    try:
        names = args.scorer or DEFAULT_SCORERS
        scorers = [scorer_named(name) for name in names if name != "check"]
        suite = load_suite(args.suite) if args.suite else None
        if args.answer is not None:
            Task(id="answer", prompt="-", answer=args.answer)  # a bad regex is refused here
    except (ScoringError, SuiteError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        why = exc.errors()[0]["msg"].removeprefix("Value error, ")
        print(f"error: --answer {args.answer!r} cannot be used: {why}", file=sys.stderr)
        return 2
    async with await open_store(settings) as store:
        try:
            session_ids = await sessions_to_score(
                store, args.targets, settings.projections_config()
            )
        except ScoringError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        task_for = suite_tasks(suite, args.answer)
        results = await rescore(store, session_ids, scorers, task_for) if scorers else []
        if "check" in names:
            checked = await check_sessions(store, settings, session_ids, task_for)
            results = _merged(results, checked) if results else checked
    failed = 0
    for result in results:
        if result.error is not None:
            failed += 1
            print(f"error: {result.error}", file=sys.stderr)
        elif args.json:
            print(json.dumps(result.model_dump(mode="json")))
        else:
            task = f" {result.task_id}" if result.task_id else ""
            for name, score in result.scores.items():
                shown = score.label or ("-" if score.value is None else f"{score.value:g}")
                print(f"{result.session_id}{task}  {name:<9} {shown:<8} {score.explanation}")
    return 1 if failed else 0


def _merged(first: list[ScoredResult], second: list[ScoredResult]) -> list[ScoredResult]:
    """Each session's scores from both lists (an error in either is kept)."""
    return [
        a.model_copy(update={"scores": a.scores | b.scores, "error": a.error or b.error})
        for a, b in zip(first, second, strict=True)
    ]
