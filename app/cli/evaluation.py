"""`chronicle eval run|score|report|compare|replay`: run (or resume) a suite, score recorded
sessions again without the model, report a run, compare two runs, replay a run.

Exit codes: 0 when every session was scored, 1 when one could not be (the others are scored
and printed; report and compare: a run of that name has no session), 2 for options that
cannot be used (an unknown scorer, a bad suite, a model that cannot be called: eval run
stops at the first trial that shows it; fix it, then --resume), 3 when a replay diverged
(eval replay: a trial that was erased, or redacted where its replay needs it, is counted
apart and sets no exit code), 130 when a run was interrupted (resume it with --resume).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from app.cli.gateway_client import add_gateway_options, gateway_user
from app.cli.log import open_owner_store, open_store, positive
from app.cli.replay import add_agent_options
from app.cli.terminal import escape_controls, raw
from app.config import Settings
from app.runtime.kinds import KINDS

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def add_parsers(commands: argparse._SubParsersAction) -> None:
    evaluation = commands.add_parser(
        "eval", help="offline evaluation: score recorded sessions (see docs/evaluation.md)"
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
        "targets",
        nargs="+",
        metavar="RUN|SESSION",
        help="an evaluation run's name (a replay run's too) or a session id",
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

    run_parser = actions.add_parser(
        "run",
        help="run every task x epoch of a suite as a recorded session, then score each",
        description="Run each task of the suite (epochs times) as an ordinary recorded "
        "session tagged with the evaluation run, at most N at a time, with a progress line "
        "on stderr, then score it (finished, answer, cost, steps).",
    )
    run_parser.add_argument(
        "suite", type=Path, nargs="?", metavar="SUITE", help="the suite's YAML file"
    )
    run_parser.add_argument(
        "--resume",
        metavar="NAME",
        help="continue the interrupted run NAME with the options it was started with (its "
        "suite as recorded, unless SUITE is given): finished task x epochs are kept, "
        "sessions that were mid-flight are run again from the start",
    )
    run_parser.add_argument("--model", help="the model (default: the configured llm_model)")
    run_parser.add_argument("--base-url", help="the model server's URL (default: llm_base_url)")
    run_parser.add_argument("--runtime", choices=list(KINDS), help="the sandbox runtime")
    run_parser.add_argument("--epochs", type=positive, default=1, metavar="K", help="runs per task")
    run_parser.add_argument(
        "--concurrency", type=positive, default=1, metavar="N", help="sessions at once"
    )
    run_parser.add_argument(
        "--name", help="the run's name (default: the suite's name and the time)"
    )
    run_parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_gateway_options(run_parser, "tasks whose agent is a command")

    report = actions.add_parser(
        "report",
        help="a run's pass rate (95%% interval), per-task table, cost and step totals",
        description="Report an evaluation run from its recorded sessions and the scores that "
        "count on them (the newest per scorer). Every task x epoch is one trial: the pass "
        "rate is pass@1 averaged over epochs, with Wilson's 95% interval; pass@k and pass^k "
        "are the shares of tasks passed in at least one and in every epoch.",
    )
    report.add_argument("run_name", metavar="RUN", help="the evaluation run's name")
    shown = report.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print the report as JSON")
    shown.add_argument("--markdown", action="store_true", help="print the report as Markdown")

    compare = actions.add_parser(
        "compare",
        help="run B against run A: the flip table, pass rates and their difference",
        description="Compare two evaluation runs task by task (a task passes a run when it "
        "passed in more than half of its epochs): newly passing, regressed, both, neither; "
        "both pass rates with Wilson's 95% interval and the difference B - A with "
        "Newcombe's interval; cost and step deltas.",
    )
    compare.add_argument("run_a", metavar="RUN_A", help="the baseline run")
    compare.add_argument("run_b", metavar="RUN_B", help="the run compared with it")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")

    replayed = actions.add_parser(
        "replay",
        help="replay every session of a run against the current agent (no model calls)",
        description="Replay each trial of the run with chronicle replay's engine (recorded "
        "model replies and observations; no model, no sandbox) and report per task matched "
        "or the first divergence. A trial of an agent command is replayed by running the "
        "command again as chronicle record --replay does (the gateway at --url serves the "
        "recorded replies; the check runs on its workspace). The replays form a run of their "
        "own (--name) that eval report and eval compare read.",
    )
    replayed.add_argument("run_name", metavar="RUN", help="the evaluation run to replay")
    replayed.add_argument(
        "--name", help="the replay run's name (default: RUN-replay- and the time)"
    )
    replayed.add_argument("--json", action="store_true", help="one JSON object per trial")
    add_agent_options(replayed)
    add_gateway_options(replayed, "trials of an agent command (replayed through it)")
    evaluation.set_defaults(handler=run)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.eval_command == "run":
        return await run_suite_command(args, settings)
    if args.eval_command == "report":
        return await report_command(args, settings)
    if args.eval_command == "compare":
        return await compare_command(args, settings)
    if args.eval_command == "replay":
        return await replay_command(args, settings)
    return await score(args, settings)


async def report_command(args: argparse.Namespace, settings: Settings) -> int:
    from app.evaluation.report_text import report_lines, report_markdown
    from app.evaluation.reporting import ReportError, run_report

    async with await open_store(settings) as store:
        try:
            report = await run_report(store, args.run_name, settings.projections)
        except ReportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    if args.json:
        print(report.model_dump_json())
    elif args.markdown:
        print(report_markdown(report))
    else:
        print("\n".join(report_lines(report)))
    return 0


async def compare_command(args: argparse.Namespace, settings: Settings) -> int:
    from app.evaluation.report import compare
    from app.evaluation.report_text import comparison_lines
    from app.evaluation.reporting import ReportError, run_report

    async with await open_store(settings) as store:
        try:
            config = settings.projections
            a = await run_report(store, args.run_a, config)
            b = await run_report(store, args.run_b, config)
        except ReportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    comparison = compare(a, b)
    if args.json:
        print(comparison.model_dump_json())
    else:
        print("\n".join(comparison_lines(comparison)))
    return 0


async def run_suite_command(args: argparse.Namespace, settings: Settings) -> int:
    from app.evaluation.running import (
        Progress,
        RunError,
        RunOptions,
        RunStopped,
        recorded_plan,
        run_suite,
    )
    from app.evaluation.scorers import BUILTIN, TRIAL_SCORERS
    from app.evaluation.sql.evaluation_rows import run_attempts
    from app.evaluation.suite import SuiteError, load_suite
    from app.external.eval_trials import GatewayTrials
    from app.projections import SessionState, bring_up_to_date

    if args.suite is None and args.resume is None:
        print("error: name the suite's file (or --resume NAME)", file=sys.stderr)
        return 2
    async with await open_store(settings) as store:
        if args.resume is not None:
            await bring_up_to_date(store, SessionState(), settings.projections)
            plan = recorded_plan(await run_attempts(store, args.resume))
            if plan is None:
                print(f"error: there is no evaluation run named {args.resume!r} to resume "
                      "(or it recorded no plan)", file=sys.stderr)  # fmt: skip
                return 2
            name = args.resume
            suite_path = args.suite or Path(plan.suite or "")
            options = plan.model_copy(update={"name": name, "suite": str(suite_path.resolve())})
        else:
            suite_path = args.suite
        try:
            suite = load_suite(suite_path)
        except SuiteError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if args.resume is None:
            name = args.name or f"{suite.name}-{datetime.now(UTC):%Y%m%dT%H%M%S}"
            options = RunOptions(
                name=name, epochs=args.epochs, concurrency=args.concurrency, model=args.model,
                base_url=args.base_url, runtime=args.runtime, suite=str(suite_path.resolve()),
            )  # fmt: skip

        def show(progress: Progress) -> None:
            end = "\n" if progress.done == progress.total else ""
            # the carriage return on purpose (one progress line), the run's name escaped
            line = escape_controls(f"{name} {progress.line()}")
            print(f"\r{line}", end=end, file=raw(sys.stderr), flush=True)

        work = asyncio.create_task(
            run_suite(
                store, settings, suite, suite_path.resolve().parent, options,
                [BUILTIN[n] for n in TRIAL_SCORERS], show, resume=args.resume is not None,
                recorder=GatewayTrials(store, settings, args.url, gateway_user(args),
                                       lambda: open_owner_store(settings)),
            )
        )  # fmt: skip
        loop = asyncio.get_running_loop()
        for number in STOP_SIGNALS:
            loop.add_signal_handler(number, work.cancel, f"interrupted by {number.name}")
        try:
            results = await work
        except RunError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except RunStopped as stopped:
            trial = f"{stopped.trial.task_id} epoch {stopped.trial.epoch}"
            print(f"\nerror: {name} stopped at {trial}: {stopped.reason}\nfix it, then continue "
                  f"the run with chronicle eval run --resume {name}", file=sys.stderr)  # fmt: skip
            return 2
        except asyncio.CancelledError:
            print(f"\n{name}: interrupted; continue it with chronicle eval run --resume {name}",
                  file=sys.stderr)  # fmt: skip
            return 130
        finally:
            for number in STOP_SIGNALS:
                loop.remove_signal_handler(number)
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


async def replay_command(args: argparse.Namespace, settings: Settings) -> int:
    from app.cli.replay import OptionError, agent_config_from
    from app.evaluation.external_replay import command_trial, replay_command_trial
    from app.evaluation.replaying import replay_trial
    from app.evaluation.reporting import ReportError, run_report
    from app.evaluation.scorers import BUILTIN, TRIAL_SCORERS
    from app.external.eval_trials import GatewayTrials

    try:
        config = agent_config_from(args)
    except OptionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    name = args.name or f"{args.run_name}-replay-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    scorers = [BUILTIN[n] for n in TRIAL_SCORERS]
    diverged = failed = model_calls = 0
    excluded: dict[str, int] = {}
    async with await open_store(settings) as store:
        try:
            report = await run_report(store, args.run_name, settings.projections)
        except ReportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        # a trial set apart for a redacted verdict can still be replayed; an erased one cannot
        trials = [
            *((t.id, t.epoch, t.session_id) for t in report.tasks),
            *((e.task_id, e.epoch or 1, e.session_id) for e in report.excluded if e.task_id),
        ]
        for gone in (e for e in report.excluded if e.kind == "erased"):
            excluded["erased"] = excluded.get("erased", 0) + 1
            print(f"a trial  erased  {gone.session_id}  {gone.note}")
        commands = {s: await command_trial(store, s) for _, _, s in trials}
        recorder = GatewayTrials(store, settings, args.url, gateway_user(args),
                                 lambda: open_owner_store(settings))  # fmt: skip
        ran = [c.command for c in commands.values() if c is not None]
        problem = await recorder.problem(ran) if ran else None
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        for task_id, epoch, session_id in trials:
            command = commands[session_id]
            if command is not None:
                replayed = await replay_command_trial(
                    store, settings, recorder, name, command, epoch, session_id,
                    args.mode, scorers,
                )  # fmt: skip
            else:
                replayed = await replay_trial(store, name, task_id, epoch, session_id, config,
                                              args.mode, scorers)  # fmt: skip
            if replayed.error is not None:
                failed += 1
                print(f"error: {task_id} epoch {epoch}: {replayed.error}", file=sys.stderr)
                continue
            model_calls += replayed.model_calls
            if replayed.excluded is not None:
                excluded[replayed.excluded] = excluded.get(replayed.excluded, 0) + 1
            else:
                diverged += not replayed.matched
            if args.json:
                print(replayed.model_dump_json())
            elif replayed.excluded is not None:
                print(f"{task_id} epoch {epoch}  {replayed.excluded}  {replayed.replay or '-'}  "
                      f"{replayed.divergence}")  # fmt: skip
            elif replayed.matched:
                print(f"{task_id} epoch {epoch}  matched  {replayed.steps_matched} of "
                      f"{replayed.steps_recorded} model calls  {replayed.replay}")  # fmt: skip
            else:
                print(f"{task_id} epoch {epoch}  diverged at step {replayed.step} "
                      f"({replayed.kind})  {replayed.replay}  {replayed.divergence}")  # fmt: skip
    if not args.json:
        apart = sum(excluded.values())
        counted = len(trials) + excluded.get("erased", 0) - apart
        print(f"{name}: {counted - diverged - failed} of {counted} matched, {diverged} diverged"
              + (f"; not counted: {', '.join(f'{n} {k}' for k, n in sorted(excluded.items()))}"
                 " (they cannot be replayed)" if apart else "")
              + f"; model calls made: {model_calls}")  # fmt: skip
    return 1 if failed else (3 if diverged else 0)


async def score(args: argparse.Namespace, settings: Settings) -> int:
    from app.evaluation.rescoring import rescore, sessions_to_score, suite_tasks
    from app.evaluation.scorers import DEFAULT_SCORERS, scorer_named
    from app.evaluation.scoring import ScoringError
    from app.evaluation.suite import SuiteError, Task, load_suite

    try:
        names = args.scorer or DEFAULT_SCORERS
        scorers = [scorer_named(name) for name in names]
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
            session_ids = await sessions_to_score(store, args.targets, settings.projections)
        except ScoringError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        task_for = suite_tasks(suite, args.answer)
        results = await rescore(store, session_ids, scorers, task_for, settings=settings)
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
