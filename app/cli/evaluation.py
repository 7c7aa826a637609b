"""`chronicle eval score RUN|SESSION...`: score recorded sessions again, without the model.

Exit codes: 0 when every session was scored, 1 when one could not be (the others are scored
and printed), 2 for options that cannot be used (an unknown scorer, a bad suite).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from app.cli.log import open_store
from app.config import Settings


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
        help="finished, answer, cost, steps (default: all four), or your own as "
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


async def run(args: argparse.Namespace, settings: Settings) -> int:
    from app.evaluation.rescoring import rescore, sessions_to_score, suite_tasks
    from app.evaluation.scorers import DEFAULT_SCORERS, scorer_named
    from app.evaluation.scoring import ScoringError
    from app.evaluation.suite import SuiteError, Task, load_suite

    try:
        scorers = [scorer_named(name) for name in (args.scorer or DEFAULT_SCORERS)]
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
        results = await rescore(store, session_ids, scorers, suite_tasks(suite, args.answer))
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
