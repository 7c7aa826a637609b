"""A suite run against the scripted model server, then reported, replayed and compared as a
user does it with `chronicle eval`: three tasks over two epochs (one passes, one fails its
check in the first epoch and passes in the second, one hits its iteration limit after a
failing command), priced calls, real local sandboxes.

Every number of the report (pass rate, pass@2 / pass^2, endings, tokens, cost, cost per
passed trial, steps, wall time, model latency p50 / p95, tool error rate) is asserted exactly:
the constants come from the script, and what the database measured (latencies, times) is
computed here from the recorded events themselves. Then the run is replayed with the model
server down (every trial matches, no request reaches the server), and replayed again with a
changed system prompt (every trial diverges at step 1), and each replay run is compared with
the recorded one.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

from app.store import EventStore, RecordedEvent
from tests.support.agent_cli import agent_environment
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

SUITE = """
name: smoke
tasks:
  - id: hello
    prompt: Make hello.txt say hi.
    check: grep -qx hi hello.txt
  - id: answer
    prompt: Write the answer to 6 x 7 in answer.txt.
    check: grep -qx 42 answer.txt
  - id: loop
    prompt: Look around forever.
    limits: {max_iterations: 2}
"""

# Every reply costs 1000 * 1e-6 + 500 * 2e-6 = $0.002 at the prices the run is given.
PRICES = {
    "CHRONICLE_LLM_INPUT_COST_PER_TOKEN": "0.000001",
    "CHRONICLE_LLM_OUTPUT_COST_PER_TOKEN": "0.000002",
}


def reply(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[tool_call(name, **arguments)], prompt_tokens=1000,
                 completion_tokens=500)  # fmt: skip


def create(path: str, text: str) -> Reply:
    return reply("str_replace_editor", command="create", path=path, file_text=text)


def epoch(answer: str) -> list[Reply]:
    return [
        create("hello.txt", "hi\n"), reply("finish", message="done"),
        create("answer.txt", f"{answer}\n"), reply("finish", message=answer),
        reply("execute_bash", command="false"), reply("execute_bash", command="ls"),
    ]  # fmt: skip


def percentile_cont(values: list[float], fraction: float) -> float:
    """PostgreSQL's percentile_cont: linear interpolation between the closest ranks."""
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def seconds(events: list[RecordedEvent]) -> Decimal:
    """From the session's first event to the controller's last state, to the microsecond."""
    end = [e for e in events if e.kind == "agent.state" and e.source == "agent"][-1]
    took = end.created_at - events[0].created_at
    return Decimal(took.days * 86400 + took.seconds) + Decimal(took.microseconds) / 10**6


async def test_a_suite_is_reported_replayed_and_compared(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    suite = tmp_path / "smoke.yaml"
    suite.write_text(SUITE)
    fake_llm.script(*epoch("41"), *epoch("42"))
    env = agent_environment(fake_llm, app_database_url, tmp_path, **PRICES)

    ran = chronicle("eval", "run", str(suite), "--name", "nightly", "--epochs", "2",
                    env=env, timeout=300)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert len(fake_llm.requests) == 12

    shown = chronicle("eval", "report", "nightly", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert (report["total"], report["passed"], report["pass_rate"]) == (6, 3, 0.5)
    assert (report["epochs"], report["pass_at_k"], report["pass_hat_k"]) == (2, 2 / 3, 1 / 3)
    tasks = [(t["id"], t["epoch"], t["passed"]) for t in report["tasks"]]
    assert tasks == [
        ("answer", 1, False), ("hello", 1, True), ("loop", 1, False),
        ("answer", 2, True), ("hello", 2, True), ("loop", 2, False),
    ]  # fmt: skip
    assert report["endings"] == {"finished": 4, "limit": 2}
    usage = report["usage"]
    assert (usage["model_calls"], usage["input_tokens"], usage["output_tokens"]) == (
        12, 12_000, 6_000)  # fmt: skip
    assert Decimal(usage["cost_usd"]) == Decimal("0.024")
    assert Decimal(usage["cost_per_passed"]) == Decimal("0.008")  # $0.024 over 3 passes
    # steps: hello 2 (create, finish), answer 2, loop 2 (two commands), twice
    assert (usage["steps"], Decimal(usage["mean_steps"])) == (12, Decimal(2))
    assert report["tool_errors"] == {"tool_calls": 8, "failed": 2, "error_rate": "0.2500"}
    assert report["unpriced_sessions"] == 0

    sessions = {UUID(t["session_id"]): await store.read(UUID(t["session_id"]))
                for t in report["tasks"]}  # fmt: skip
    walls = [seconds(events) for events in sessions.values()]
    assert Decimal(usage["wall_seconds"]) == sum(walls)
    latencies = [e.payload["latency_ms"] for events in sessions.values()
                 for e in events if e.kind == "llm.call"]  # fmt: skip
    assert len(latencies) == 12
    assert report["latency"] == {
        "model_calls": 12,
        "p50_ms": str(round(Decimal(repr(percentile_cont(latencies, 0.5))), 1)),
        "p95_ms": str(round(Decimal(repr(percentile_cont(latencies, 0.95))), 1)),
    }

    markdown = chronicle("eval", "report", "nightly", "--markdown", env=env).stdout.splitlines()
    assert markdown[0] == "# Evaluation run `nightly`"
    assert markdown[2] == (
        "3 of 6 trials passed: pass rate 50.0% (95% CI 18.8% to 81.2%); pass@2 66.7%, pass^2 33.3%."
    )
    assert "| answer | 2 | 1 | $0.008 | 4 |" in markdown
    assert "- **endings**: finished 4, limit 2" in markdown
    assert "- **tool errors**: 2 of 8 (25.0%)" in markdown
    assert "- **cost**: $0.024, per passed trial $0.008" in markdown

    # Regression testing without the model: the server is down, and nothing reaches it.
    fake_llm.stop()
    replayed = chronicle("eval", "replay", "nightly", "--name", "same", env=env, timeout=300)
    assert replayed.returncode == 0, replayed.stderr
    lines = replayed.stdout.splitlines()
    assert [line.split()[:4] for line in lines[:-1]] == [
        [task, "epoch", str(number), "matched"] for task, number, _ in tasks
    ]
    assert lines[-1] == "same: 6 of 6 matched, 0 diverged; model calls made: 0"
    assert len(fake_llm.requests) == 12

    same = json.loads(chronicle("eval", "compare", "nightly", "same", "--json", env=env).stdout)
    assert {k: same[k] for k in ("newly_passing", "regressed", "both", "neither")} == {
        "newly_passing": [], "regressed": [], "both": ["hello"], "neither": ["answer", "loop"],
    }  # fmt: skip
    assert (same["replays"], same["diverged"], same["steps_delta"]) == (6, [], 0)
    # A replay's calls are served, not made: it spends nothing.
    assert Decimal(same["cost_delta_usd"]) == Decimal("-0.024")

    prompt = tmp_path / "prompt.txt"
    prompt.write_text("You are a different agent in {workspace}.")
    changed = chronicle("eval", "replay", "nightly", "--name", "changed", "--system-prompt",
                        str(prompt), env=env, timeout=300)  # fmt: skip
    assert changed.returncode == 3, changed.stderr
    assert [line.split()[2:7] for line in changed.stdout.splitlines()[:-1]] == [
        [str(number), "diverged", "at", "step", "1"] for _, number, _ in tasks
    ]
    assert changed.stdout.splitlines()[-1] == (
        "changed: 0 of 6 matched, 6 diverged; model calls made: 0"
    )
    compared = chronicle("eval", "compare", "nightly", "changed", env=env)
    assert compared.returncode == 0, compared.stderr
    assert "replays: 6 of 6 diverged" in compared.stdout
    assert "regressed (passed in A, failed in B): 1  hello" in compared.stdout
    flips = json.loads(chronicle("eval", "compare", "nightly", "changed", "--json", env=env).stdout)
    assert [(d["task_id"], d["epoch"], d["divergence_step"], d["divergence_kind"])
            for d in flips["diverged"]] == [
        (task, number, 1, "request") for task, number in sorted((t, n) for t, n, _ in tasks)
    ]  # fmt: skip
    assert len(fake_llm.requests) == 12
