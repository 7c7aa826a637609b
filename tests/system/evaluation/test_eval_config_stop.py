"""`chronicle eval run` whose model cannot be called stops at the first trial that shows it,
says why, exits 2, and is carried on by `--resume` once the configuration is fixed.

Before: a key the model server refused (401, as OpenAI answers a wrong key) failed every
trial alike, printed no reason, exited 0, and left the run's name taken for good.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from app.evaluation.reporting import run_report
from app.store import EventStore
from tests.support.agent_cli import agent_environment
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

SUITE = """
name: keyed
tasks:
  - {id: one, prompt: Say done.}
  - {id: two, prompt: Say done.}
  - {id: three, prompt: Say done.}
"""


async def test_a_refused_key_stops_the_run_after_one_trial_and_resume_finishes_it(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    fake_llm.key = "sk-right"
    env = agent_environment(fake_llm, app_database_url, tmp_path, CHRONICLE_LLM_API_KEY="sk-wrong")

    def eval_run(*args: str, env: dict[str, str] = env) -> tuple[int, str, str]:
        done = chronicle("eval", "run", *args, env=env, timeout=300)
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout, done.stderr

    code, _, stderr = await asyncio.to_thread(eval_run, str(suite), "--name", "nightly")
    assert code == 2, stderr
    assert len(fake_llm.requests) == 1  # one trial, one call: the other two never started
    assert (
        "error: nightly stopped at one epoch 1: the model provider refused the credentials"
        in stderr
    )
    assert "Incorrect API key provided" in stderr
    assert "continue the run with chronicle eval run --resume nightly" in stderr

    # The name is the stopped run's: a new run of it says so, and how to go on.
    code, _, stderr = await asyncio.to_thread(eval_run, str(suite), "--name", "nightly")
    assert code == 2
    assert "evaluation run 'nightly' stopped: the model provider refused the credentials" in stderr
    assert "resume it with --resume nightly or choose another --name" in stderr
    assert len(fake_llm.requests) == 1

    # The key fixed, --resume runs the stopped trial again and the two never started.
    fake_llm.script(*[Reply(tool_calls=[tool_call("finish", message="done")]) for _ in range(3)])
    fixed = env | {"CHRONICLE_LLM_API_KEY": "sk-right"}
    code, stdout, stderr = await asyncio.to_thread(
        eval_run, "--resume", "nightly", "--json", env=fixed
    )
    assert code == 0, stderr
    results = json.loads(stdout)
    assert (results["total"], results["passed"]) == (3, 3)
    assert len(fake_llm.requests) == 1 + 3
    report = await run_report(store, "nightly")
    assert (report.total, report.passed) == (3, 3)
    assert (report.resumes, report.rerun_sessions) == (1, 1)
