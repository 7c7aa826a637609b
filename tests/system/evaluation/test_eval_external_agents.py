"""`chronicle eval run` of a suite whose agent is a command: a real ``chronicle serve`` whose
gateway calls the scripted fake model, a small agent on the official ``openai`` SDK that writes
the model's answer into its workspace, two tasks x two epochs with a ``check`` (one task
passes, one fails), read back as the report, ``eval score`` and the sessions' logs read them,
then ``eval replay`` of that run through the command (matched with no model call; a changed
agent diverges); a command that times out or exits non-zero is a scored failure; no server
is a sentence."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.agent_cli import start
from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply
from tests.support.postgres import PgServer
from tests.support.record_gateway import fake_model, recording_server
from tests.support.waiting import until

USER = "evaluator"

#: The agent: the task from its argument (and the same in its environment and prompt file),
#: one model call, whose answer names a file and its new first line.
AGENT = textwrap.dedent(
    """
    import os, sys
    from openai import OpenAI

    prompt = sys.argv[1]
    assert os.environ["CHRONICLE_TASK_PROMPT"] == prompt, "the prompt's variable"
    with open(os.environ["CHRONICLE_TASK_PROMPT_FILE"]) as given:
        assert given.read() == prompt, "the prompt's file"
    reply = OpenAI().chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": prompt}]
    )
    path, _, text = reply.choices[0].message.content.partition("\\n")
    with open(path, "w") as out:
        out.write(text + "\\n")
    print("wrote", path, "for task", os.environ["CHRONICLE_TASK_ID"])
    """
)

SUITE = """
name: outside
agent: {{command: [{python}, "{{suite_dir}}/agent.py", "{{prompt}}"], timeout: 120}}
tasks:
  - id: greet
    prompt: Make greeting.txt say hello.
    files: {{greeting.txt: "hi\\n"}}
    check: grep -qx hello greeting.txt
  - id: sum
    prompt: Write 6 x 7 into answer.txt.
    check: grep -qx 42 answer.txt
"""

BROKEN = """
name: broken
tasks:
  - id: slow
    prompt: Take your time.
    agent: {{command: [{python}, -c, "import time; print('started', flush=True); time.sleep(60)"],
             timeout: 1}}
  - id: crash
    prompt: Fail.
    agent: {{command: [{python}, -c, "import sys; print('boom'); sys.exit(3)"]}}
    check: "true"
  - id: killed
    prompt: Go away.
    agent: {{command: [{python}, -c, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]}}
"""


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeLlmServer]:
    server = fake_model()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gateway(
    pg_server: PgServer,
    pg_template: str,
    tmp_path_factory: pytest.TempPathFactory,
    upstream: FakeLlmServer,
) -> Iterator[ServerProcess]:
    """One server for the module, its model the fake one, and the user the trials are of."""
    root = tmp_path_factory.mktemp("eval-external")
    yield from recording_server(pg_server, pg_template, root, upstream, users=((USER, False),))


def eval_run(gateway: ServerProcess, suite: Path, *options: str) -> Any:
    ran = chronicle(
        "eval", "run", str(suite), "--url", gateway.url, "--user", USER, "--json", *options,
        env=gateway.env, timeout=240,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return json.loads(ran.stdout)


def eval_replay(gateway: ServerProcess, run: str, name: str) -> subprocess.CompletedProcess[str]:
    return chronicle(
        "eval", "replay", run, "--name", name, "--url", gateway.url, "--user", USER, "--json",
        env=gateway.env, timeout=240,
    )  # fmt: skip


def events(gateway: ServerProcess, session: str) -> list[dict[str, Any]]:
    listed = chronicle("events", session, "--json", env=gateway.env)
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def verdicts(log: list[dict[str, Any]]) -> dict[str, str | None]:
    return {e["payload"]["name"]: e["payload"]["score_label"] for e in log
            if e["kind"] == "eval.score"}  # fmt: skip


def test_an_outside_agent_is_run_recorded_and_scored_per_task_and_epoch(
    gateway: ServerProcess, upstream: FakeLlmServer, tmp_path: Path
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    suite = tmp_path / "outside.yaml"
    suite.write_text(SUITE.format(python=sys.executable))
    # trials run in suite order, epoch by epoch (one at a time): greet, sum, greet, sum
    greeting, wrong = Reply(content="greeting.txt\nhello"), Reply(content="answer.txt\n41")
    upstream.script(greeting, wrong, greeting, wrong)

    run = eval_run(gateway, suite, "--name", "outside-1", "--epochs", "2")
    assert [(t["task_id"], t["epoch"], t["passed"], t["outcome"]) for t in run["tasks"]] == [
        ("greet", 1, True, "finished"),
        ("sum", 1, False, "finished"),
        ("greet", 2, True, "finished"),
        ("sum", 2, False, "finished"),
    ]
    assert (run["passed"], run["total"]) == (2, 4)
    assert len(upstream.requests) == 4

    workspace = Path(gateway.env["CHRONICLE_DATA_DIR"]) / "evaluations" / "outside-1"
    assert (workspace / "greet" / "epoch-2" / "greeting.txt").read_text() == "hello\n"
    assert (workspace / "sum" / "epoch-1.log").read_text() == "wrote answer.txt for task sum\n"

    sessions = {(t["task_id"], t["epoch"]): t["session_id"] for t in run["tasks"]}
    log = events(gateway, sessions[("sum", 2)])
    created = log[0]["payload"]["config"]
    assert created["agent"] == "external"
    assert (created["evaluation_run"], created["evaluation_epoch"]) == ("outside-1", 2)
    assert created["evaluation_task"]["id"] == "sum"
    assert created["command"] == [sys.executable, str(agent), "Write 6 x 7 into answer.txt."]
    calls = [e["payload"] for e in log if e["kind"] == "llm.call"]
    assert [call["response"]["content"] for call in calls] == ["answer.txt\n41"]
    diff = next(e["payload"] for e in log if e["kind"] == "workspace.diff")
    assert diff["changed"] == ["answer.txt"]
    assert verdicts(log) == {"finished": "pass", "cost": "unpriced", "steps": None, "check": "fail"}

    report = chronicle("eval", "report", "outside-1", "--json", env=gateway.env)
    assert report.returncode == 0, report.stderr
    shown = json.loads(report.stdout)
    assert (shown["total"], shown["passed"], shown["pass_rate"]) == (4, 2, 0.5)
    assert sorted((t["id"], t["epoch"], t["passed"]) for t in shown["tasks"]) == [
        ("greet", 1, True), ("greet", 2, True), ("sum", 1, False), ("sum", 2, False),
    ]  # fmt: skip
    assert (shown["pass_at_k"], shown["endings"]) == (0.5, {"finished": 4})
    assert (shown["usage"]["model_calls"], shown["usage"]["input_tokens"]) == (4, 400)

    rescored = chronicle("eval", "score", "outside-1", "--scorer", "finished", env=gateway.env)
    assert rescored.returncode == 0, rescored.stderr
    assert sorted(line.split()[1:4] for line in rescored.stdout.splitlines()) == [
        ["greet", "finished", "pass"], ["greet", "finished", "pass"],
        ["sum", "finished", "pass"], ["sum", "finished", "pass"],
    ]  # fmt: skip

    # eval replay: each trial's command again, the gateway serving its recorded answers
    replayed = eval_replay(gateway, "outside-1", "outside-replay")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    trials = [json.loads(line) for line in replayed.stdout.splitlines()]
    assert sorted((t["task_id"], t["epoch"], t["matched"], t["model_calls"]) for t in trials) == [
        ("greet", 1, True, 0), ("greet", 2, True, 0), ("sum", 1, True, 0), ("sum", 2, True, 0),
    ]  # fmt: skip
    assert len(upstream.requests) == 4  # no model call
    shown = json.loads(
        chronicle("eval", "report", "outside-replay", "--json", env=gateway.env).stdout
    )
    # each replay made its workspace again, and the check ran on it
    assert sorted((t["id"], t["epoch"], t["passed"]) for t in shown["tasks"]) == [
        ("greet", 1, True), ("greet", 2, True), ("sum", 1, False), ("sum", 2, False),
    ]  # fmt: skip
    replay_log = events(gateway, trials[0]["replay"])
    assert replay_log[0]["payload"]["config"]["replay_of"] == trials[0]["recorded"]
    assert [e["payload"]["replayed_from"] is not None for e in replay_log
            if e["kind"] == "llm.call"] == [True]  # fmt: skip

    # a changed agent (one more message in its request) diverges at its first call
    (tmp_path / "agent.py").write_text(
        AGENT.replace(
            '[{"role": "user"', '[{"role": "system", "content": "be brief"}, {"role": "user"'
        )
    )
    diverged = eval_replay(gateway, "outside-1", "outside-changed")
    assert diverged.returncode == 3, diverged.stdout + diverged.stderr
    kinds = [
        (t["matched"], t["step"], t["kind"]) for t in map(json.loads, diverged.stdout.splitlines())
    ]
    assert kinds == [(False, 1, "request")] * 4
    assert len(upstream.requests) == 4


def test_a_command_that_times_out_or_fails_is_a_scored_failure(
    gateway: ServerProcess, tmp_path: Path
) -> None:
    suite = tmp_path / "broken.yaml"
    suite.write_text(BROKEN.format(python=sys.executable))
    run = eval_run(gateway, suite, "--name", "broken-1")
    slow, crash, killed = run["tasks"]
    assert (slow["passed"], slow["outcome"]) == (False, "error")
    assert "did not finish within its timeout of 1 s" in slow["error"]
    assert (crash["passed"], crash["outcome"]) == (False, "error")
    assert crash["error"] == "the command exited with code 3"
    # a signal ended it: stopped, as its session's ending says, not a failed exit code
    assert (killed["passed"], killed["outcome"]) == (False, "stopped")
    assert killed["error"] == "the command was ended by SIGKILL"

    ended = [
        e["payload"] for e in events(gateway, slow["session_id"]) if e["kind"] == "agent.state"
    ]
    assert (ended[-1]["state"], ended[-1]["exit_code"]) == ("error", 124)
    crashed = events(gateway, crash["session_id"])
    assert verdicts(crashed)["finished"] == "fail" and verdicts(crashed)["check"] == "pass"
    runs = Path(gateway.env["CHRONICLE_DATA_DIR"]) / "evaluations" / "broken-1"
    assert (runs / "crash" / "epoch-1.log").read_text() == "boom\n"
    assert (runs / "slow" / "epoch-1.log").read_text() == "started\n"


def test_no_running_server_is_a_sentence_before_any_trial(
    gateway: ServerProcess, tmp_path: Path
) -> None:
    suite = tmp_path / "outside.yaml"
    suite.write_text(SUITE.format(python=sys.executable))
    ran = chronicle(
        "eval", "run", str(suite), "--url", "http://127.0.0.1:9", "--user", USER,
        "--name", "nowhere", env=gateway.env,
    )  # fmt: skip
    assert ran.returncode == 2
    assert "error: no Chronicle server answers at http://127.0.0.1:9" in ran.stderr
    assert "Traceback" not in ran.stderr
    runs = Path(gateway.env["CHRONICLE_DATA_DIR"]) / "evaluations"
    assert not (runs / "nowhere").exists()  # no trial started


#: Waits the first time it runs (its pid in a file beside the suite), finishes the next time.
WAITS_ONCE = (
    "import os, sys, time\n"
    "mark = sys.argv[1]\n"
    "if not os.path.exists(mark):\n"
    "    open(mark, 'w').write(str(os.getpid()))\n"
    "    time.sleep(120)\n"
)


async def test_an_interrupted_command_trial_is_stopped_and_run_again_on_resume(
    gateway: ServerProcess, tmp_path: Path
) -> None:
    """SIGINT to ``eval run`` stops the command (its process group, not left running) and
    leaves its trial mid-flight; ``--resume`` runs it again from the start as a new attempt."""
    mark = tmp_path / "pid"
    suite = tmp_path / "once.yaml"
    suite.write_text(
        "name: once\ntasks:\n  - id: wait\n    prompt: Wait.\n    agent: {command: ["
        f"{sys.executable}, -c, {json.dumps(WAITS_ONCE)}, {mark}], timeout: 300}}\n"
    )
    options = ["--url", gateway.url, "--user", USER, "--name", "once-1"]
    run = start("eval", "run", str(suite), *options, env=gateway.env)
    await until(lambda: mark.exists() and mark.read_text() != "", timeout=60,
                what="the command started", process=run)  # fmt: skip
    pid = int(mark.read_text())
    run.send_signal(signal.SIGINT)
    assert run.wait(timeout=60) == 130, run.communicate()
    await until(lambda: not alive(pid), timeout=10, what="the command stopped")

    resumed = chronicle("eval", "run", "--resume", "once-1", *options[:4], "--json",
                        env=gateway.env, timeout=120)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    (trial,) = json.loads(resumed.stdout)["tasks"]
    assert (trial["passed"], trial["outcome"]) == (True, "finished")
    report = json.loads(chronicle("eval", "report", "once-1", "--json", env=gateway.env).stdout)
    assert (report["passed"], report["resumes"], report["rerun_sessions"]) == (1, 1, 1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
