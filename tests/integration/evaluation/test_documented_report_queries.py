"""Every query of docs/analytics.md's "Evaluation runs", run as the analyst on a recorded run,
must give the numbers the recorded events make: four tasks over two epochs (passes, a
failed check, an iteration limit, a stuck agent, a question to the user, an error), one
trial interrupted and run again by a resume, and a replay run with one divergence.

The queries are read from the document (each ```sql block after an
``<!-- evaluation-query: NAME -->`` marker), so the query documented is the query tested,
and one added without a check here fails ``test_every_documented_query_is_checked``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Task
from app.events import (
    AgentState,
    EvalScore,
    Event,
    Finish,
    LlmCall,
    LlmUsage,
    Message,
    ReplayResultEvent,
    Run,
    RunOutput,
    SessionCreated,
)
from app.projections import SessionState, bring_up_to_date
from app.store import EventStore
from app.store.analytics import QueryResult, run_query
from tests.support.analyst_login import analyst_login
from tests.support.postgres import ServerAddress

DOC = Path(__file__).resolve().parents[3] / "docs" / "analytics.md"
QUERY = re.compile(r"<!-- evaluation-query: (?P<name>[a-z_]+) -->\n```sql\n(?P<sql>.*?)```", re.S)

LIMIT = "reached the iteration limit (2); raise --max-iterations and resume to continue"
STUCK = "the agent looks stuck: the same action 4 times"


def documented_queries() -> dict[str, str]:
    found: dict[str, str] = {}
    for match in QUERY.finditer(DOC.read_text(encoding="utf-8")):
        assert match["name"] not in found, f"two queries named {match['name']}"
        found[match["name"]] = match["sql"]
    return found


@pytest.fixture
def analyst_database_url(database_url: str, pg_address: ServerAddress) -> Iterator[str]:
    with analyst_login(database_url, pg_address) as url:
        yield url


async def trial(
    store: EventStore, run: str, task: str, epoch: int, *, exit_code: int, end: str,
    reason: str = "", check: str | None = None, latency: float = 100.0, attempt: int = 1,
    resume: int = 0, replay_of: uuid.UUID | None = None,
) -> uuid.UUID:  # fmt: skip
    """A recorded trial: one model call ($0.03, 1000 + 100 tokens), one command with
    ``exit_code``, a finish when it ``end``s finished, and its scores."""
    config = evaluation_config(run, Task(id=task, prompt="p"), epoch) | {
        "evaluation_attempt": attempt, "evaluation_resume": resume,
    }  # fmt: skip
    events: list[Event] = [
        SessionCreated(config=config, replay_of=replay_of),
        Message(content="p"),
        LlmCall(model="openai/m", fingerprint="f" * 64, cost_usd=0.03, latency_ms=latency,
                usage=LlmUsage(prompt_tokens=1000, completion_tokens=100, total_tokens=1100)),
        Run(command="make test", cause=3),
        RunOutput(output="", exit_code=exit_code, cause=4),
    ]  # fmt: skip
    if end == "finished":
        events.append(Finish(message="done", cause=3))
    if end != "working":
        events.append(AgentState(state=end, reason=reason))
        verdicts = [("finished", "pass" if end == "finished" else "fail")]
        if check is not None:
            verdicts.append(("check", check))
        events += [
            EvalScore(name=name, scorer_version=1, score_value=float(label == "pass"),
                      score_label=label, explanation="e", scored_seq=len(events),
                      evaluation_run=run)
            for name, label in verdicts
        ]  # fmt: skip
    session = uuid.uuid4()
    await store.append(session, events, expected_seq=0)
    return session


async def replayed(
    store: EventStore, name: str, recorded: uuid.UUID, task: str, divergence_step: int | None
) -> None:
    """A replay of ``recorded`` in the replay run ``name``, tagged as eval replay tags it."""
    session = await trial(store, "nightly", task, 1, exit_code=0, end="finished",
                          replay_of=recorded, latency=50.0)  # fmt: skip
    matched = divergence_step is None
    divergence = None if matched else {
        "kind": "request", "step": divergence_step, "recorded_seq": 3, "summary": "differs",
    }  # fmt: skip
    await store.append(session, [
        ReplayResultEvent(replay_of=recorded, mode="strict", matched=matched, steps_recorded=1,
                          steps_served=1, steps_matched=1 if matched else 0,
                          divergence=divergence, model_calls=0, seconds=0.1),
        EvalScore(name="replay", scorer_version=1, score_value=float(matched),
                  score_label="pass" if matched else "fail", explanation="e", scored_seq=9,
                  evaluation_run=name),
    ])  # fmt: skip


@pytest.fixture
async def recorded(store: EventStore) -> dict[str, uuid.UUID]:
    """The run "nightly" (latencies 100 ... 800 ms over its 8 counted trials) and its replays."""
    ids = {
        "a1": await trial(store, "nightly", "a", 1, exit_code=0, end="finished", check="pass",
                          latency=100),
        "a2": await trial(store, "nightly", "a", 2, exit_code=0, end="finished", check="pass",
                          latency=200),
        # interrupted (its process died mid-run), then run again by the first resume
        "b1-interrupted": await trial(store, "nightly", "b", 1, exit_code=0, end="working",
                                      latency=9000),
        "b1": await trial(store, "nightly", "b", 1, exit_code=1, end="finished", check="fail",
                          latency=300, attempt=2, resume=1),
        "b2": await trial(store, "nightly", "b", 2, exit_code=0, end="finished", check="pass",
                          latency=400),
        "c1": await trial(store, "nightly", "c", 1, exit_code=1, end="stopped", reason=LIMIT,
                          latency=500),
        "c2": await trial(store, "nightly", "c", 2, exit_code=1, end="error", reason=STUCK,
                          latency=600),
        "d1": await trial(store, "nightly", "d", 1, exit_code=0, end="awaiting_user_input",
                          latency=700),
        "d2": await trial(store, "nightly", "d", 2, exit_code=2, end="error", reason="boom",
                          latency=800),
    }  # fmt: skip
    await replayed(store, "nightly-replay", ids["a1"], "a", divergence_step=1)
    await replayed(store, "nightly-replay", ids["a2"], "b", divergence_step=None)
    await bring_up_to_date(store, SessionState())
    return ids


def check_trials(result: QueryResult) -> None:
    d = Decimal("0.03")
    assert result.rows == [
        ("a", 1, True, "finished", 2, d), ("a", 2, True, "finished", 2, d),
        ("b", 1, False, "finished", 2, d), ("b", 2, True, "finished", 2, d),
        ("c", 1, False, "limit", 1, d), ("c", 2, False, "stuck", 1, d),
        ("d", 1, False, "awaiting_input", 1, d), ("d", 2, False, "error", 1, d),
    ]  # fmt: skip


def check_flaky_tasks(result: QueryResult) -> None:
    assert result.rows == [("nightly", "b", 2, 1)]


def check_runs(result: QueryResult) -> None:
    assert result.rows == [
        # the replay run: a's replay diverged (its replay verdict fails), b's matched
        ("nightly-replay", 2, 1, Decimal("0.5000"), 1, Decimal("0.5000"), Decimal("0.5000"), 0),
        ("nightly", 8, 3, Decimal("0.3750"), 2, Decimal("0.5000"), Decimal("0.2500"), 1),
    ]


def check_endings(result: QueryResult) -> None:
    assert result.rows == [
        ("finished", 4), ("awaiting_input", 1), ("error", 1), ("limit", 1), ("stuck", 1),
    ]  # fmt: skip


def check_cost_per_pass(result: QueryResult) -> None:
    assert result.rows == [
        # 8 trials at $0.03 over 3 passes; the superseded attempt is not counted
        ("nightly", 8000, 800, Decimal("0.24"), Decimal("0.08"), 12),
        ("nightly-replay", 2000, 200, Decimal("0.06"), Decimal("0.06"), 4),
    ]


def check_latency(result: QueryResult) -> None:
    # nightly: 100 ... 800 ms (9000 ms was the superseded attempt's): p50 450, p95 765
    assert result.rows == [
        ("nightly", 8, Decimal("450.0"), Decimal("765.0")),
        ("nightly-replay", 2, Decimal("50.0"), Decimal("50.0")),
    ]


def check_tool_errors(result: QueryResult) -> None:
    # exit codes 1 (b1, c1, c2) and 2 (d2) of 8 commands
    assert result.rows == [
        ("nightly", 8, 4, Decimal("0.5000")),
        ("nightly-replay", 2, 0, Decimal("0.0000")),
    ]


def check_divergences(result: QueryResult) -> None:
    assert result.rows == [("nightly-replay", "a", 1, 1, "request")]


CHECKS: dict[str, Callable[[QueryResult], None]] = {
    "trials": check_trials,
    "flaky_tasks": check_flaky_tasks,
    "runs": check_runs,
    "endings": check_endings,
    "cost_per_pass": check_cost_per_pass,
    "latency": check_latency,
    "tool_errors": check_tool_errors,
    "divergences": check_divergences,
}


def test_every_documented_query_is_checked() -> None:
    assert set(documented_queries()) == set(CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
async def test_documented_query(
    name: str, recorded: dict[str, Any], analyst_database_url: str
) -> None:
    CHECKS[name](await run_query(analyst_database_url, documented_queries()[name]))
