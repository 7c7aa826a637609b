"""`chronicle eval report` and `chronicle eval compare` as a user runs them, over sessions
recorded in a real PostgreSQL with their eval.score events: the table and totals printed,
the --json fields the issue names, and the error for a run that does not exist."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Task
from app.events import AgentState, EvalScore, Finish, LlmCall, Message, SessionCreated
from app.store import EventStore
from tests.support.cli import chronicle, cli_environment


async def scored(store: EventStore, run: str, task: str, label: str) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(session, [
        SessionCreated(config=evaluation_config(run, Task(id=task, prompt="p"), 1)),
        Message(content="p"),
        LlmCall(model="m", fingerprint="f", cost_usd=0.5),
        Finish(message="done", cause=3),
        AgentState(state="finished"),
        EvalScore(name="check", scorer_version=2, score_value=float(label == "pass"),
                  score_label=label, explanation="e", scored_seq=5, evaluation_run=run),
    ], expected_seq=0)  # fmt: skip
    return session


async def test_report_and_compare_two_runs(
    store: EventStore, tmp_path: Path, app_database_url: str
) -> None:
    before = {t: await scored(store, "before", t, v) for t, v in
              (("keeps", "pass"), ("breaks", "pass"), ("fixed", "fail"))}  # fmt: skip
    for task, label in (("keeps", "pass"), ("breaks", "fail"), ("fixed", "pass")):
        await scored(store, "after", task, label)
    env = cli_environment(app_database_url, tmp_path)

    shown = chronicle("eval", "report", "before", env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == ("before: 2 of 3 sessions passed, pass rate 66.7% (95% CI 20.8% to 93.9%)")
    assert lines[2].split() == ["task", "epochs", "passed", "cost", "steps", "sessions"]
    assert lines[5].split() == ["keeps", "1", "1", "$0.5", "1", str(before["keeps"])]
    assert lines[6:10] == [
        "",
        "endings: finished 3",
        "tokens: 0 in, 0 out (3 model calls)",
        "cost: $1.5, per passed trial $0.75",
    ]

    as_json = json.loads(chronicle("eval", "report", "before", "--json", env=env).stdout)
    assert (as_json["total"], as_json["passed"]) == (3, 2)
    assert as_json["pass_rate"] == 2 / 3
    assert [(t["id"], t["epoch"], t["passed"], t["session_id"]) for t in as_json["tasks"]] == [
        ("breaks", 1, True, str(before["breaks"])),
        ("fixed", 1, False, str(before["fixed"])),
        ("keeps", 1, True, str(before["keeps"])),
    ]

    compared = chronicle("eval", "compare", "before", "after", env=env)
    assert compared.returncode == 0, compared.stderr
    assert "newly passing (failed in A, passed in B): 1  fixed" in compared.stdout
    assert "regressed (passed in A, failed in B): 1  breaks" in compared.stdout
    assert "B - A: +0.0% (95% CI " in compared.stdout
    flips = json.loads(chronicle("eval", "compare", "before", "after", "--json", env=env).stdout)
    assert {k: flips[k] for k in ("newly_passing", "regressed", "both", "neither")} == {
        "newly_passing": ["fixed"], "regressed": ["breaks"], "both": ["keeps"], "neither": [],
    }  # fmt: skip

    missing = chronicle("eval", "compare", "before", "nope", env=env)
    assert missing.returncode == 1
    assert "error: no evaluation run is named 'nope'" in missing.stderr
