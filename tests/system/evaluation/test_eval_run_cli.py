"""`chronicle eval run` against the fake model server with real local sandboxes: three tasks
(one passes, one gives the wrong answer, one hits its iteration limit), each an ordinary
recorded session tagged with the run, its workspace prepared from a git repository at a
commit, files and a setup command, and each scored; a second run under the same name is
refused, and so is a bad suite."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from uuid import UUID

from app.evaluation.scoring import latest_scores
from app.projections import SessionState, bring_up_to_date
from app.sessions.sql.session_rows import list_sessions
from app.store import EventStore
from tests.support.agent_cli import agent_environment
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

SUITE = """
name: smoke
tasks:
  - id: hello
    prompt: Say done.
    repo: repo
    commit: {commit}
    files: {{extra/notes.txt: "from the suite"}}
    setup: [echo ready > setup.txt]
    check: grep -qx 1 version.txt && grep -qx ready setup.txt && test ! -e {host_file}
  - id: sum
    prompt: What is 6 x 7?
    answer: "regex:\\\\b42\\\\b"
    check: test -f answer.txt
  - id: loop
    prompt: List the files forever.
    limits: {{max_iterations: 1}}
"""


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def repository(root: Path) -> str:
    """A repository whose first commit has version 1 and whose HEAD has version 2."""
    root.mkdir()
    git("init", "-q", cwd=root)
    (root / "version.txt").write_text("1\n")
    git("add", ".", cwd=root)
    git("commit", "-q", "-m", "one", cwd=root)
    first = git("rev-parse", "HEAD", cwd=root)
    (root / "version.txt").write_text("2\n")
    git("commit", "-q", "-am", "two", cwd=root)
    return first


async def test_a_suite_runs_as_recorded_sessions_and_is_scored(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    suite = tmp_path / "suite" / "smoke.yaml"
    suite.parent.mkdir()
    commit = repository(suite.parent / "repo")
    # The check runs what the agent wrote: in a sandbox, which does not see this machine's
    # files (run on the host, the hello task's check would find this one and fail).
    host_file = tmp_path / "host-only.txt"
    host_file.write_text("the host's")
    suite.write_text(SUITE.format(commit=commit, host_file=host_file))
    fake_llm.script(
        Reply(tool_calls=[tool_call("finish", message="done")]),
        Reply(
            tool_calls=[
                tool_call("str_replace_editor", command="create", path="answer.txt", file_text="41")
            ]
        ),
        Reply(tool_calls=[tool_call("finish", message="41")]),
        Reply(tool_calls=[tool_call("execute_bash", command="ls")]),
    )
    env = agent_environment(fake_llm, app_database_url, tmp_path)

    ran = chronicle("eval", "run", str(suite), "--name", "nightly", "--json", env=env, timeout=240)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.rstrip().endswith("nightly [3/3] passed 1, failed 2, cost $0")
    assert "nightly [1/3] passed 1, failed 0" in ran.stderr
    report = json.loads(ran.stdout)
    assert (report["name"], report["total"], report["passed"]) == ("nightly", 3, 1)
    assert report["pass_rate"] == 1 / 3
    tasks = {t["task_id"]: t for t in report["tasks"]}
    assert [(t["task_id"], t["epoch"], t["passed"]) for t in report["tasks"]] == [
        ("hello", 1, True),
        ("sum", 1, False),
        ("loop", 1, False),
    ]
    assert (tasks["hello"]["outcome"], tasks["sum"]["outcome"]) == ("finished", "finished")
    assert tasks["loop"]["outcome"] == "stopped"
    assert len(fake_llm.requests) == 4

    workspace = tmp_path / "data" / "evaluations" / "nightly" / "hello" / "epoch-1"
    assert (workspace / "version.txt").read_text() == "1\n"  # the commit, not HEAD
    assert (workspace / "extra" / "notes.txt").read_text() == "from the suite"
    assert (workspace / "setup.txt").read_text() == "ready\n"

    await bring_up_to_date(store, SessionState())
    rows = {row.session_id: row for row in await list_sessions(store, limit=10)}
    ids = [UUID(t["session_id"]) for t in report["tasks"]]
    assert [rows[i].evaluation_run for i in ids] == ["nightly"] * 3
    assert rows[ids[2]].status == "limit"

    labels = []
    for session_id in ids:
        events = await store.read(session_id)
        config = events[0].payload["config"]
        assert config["evaluation_run"] == "nightly" and config["evaluation_epoch"] == 1
        latest = latest_scores(events)
        labels.append({name: e.payload["score_label"] for (name, _), e in latest.items()})
    assert labels == [
        {"finished": "pass", "cost": "unpriced", "steps": None, "check": "pass"},
        {"finished": "pass", "answer": "fail", "cost": "unpriced", "steps": None, "check": "pass"},
        {"finished": "fail", "cost": "unpriced", "steps": None},
    ]

    check = latest_scores(await store.read(ids[1]))[("check", 1)]
    assert check.payload["explanation"] == "`test -f answer.txt` exited 0"
    assert check.payload["evaluation_run"] == "nightly"

    again = chronicle("eval", "run", str(suite), "--name", "nightly", env=env)
    assert again.returncode == 2
    assert "an evaluation run named 'nightly' exists already" in again.stderr

    rescored = chronicle("eval", "score", "nightly", "--scorer", "finished", env=env)
    assert rescored.returncode == 0, rescored.stderr
    assert [line.split()[1:4] for line in rescored.stdout.splitlines()] == [
        ["hello", "finished", "pass"],
        ["sum", "finished", "pass"],
        ["loop", "finished", "fail"],
    ]

    # Offline: the sessions' workspaces are gone; the check runs on the final workspace
    # rebuilt from the log (the start restored from the task's repository, the change applied).
    shutil.rmtree(tmp_path / "data" / "evaluations")
    fake_llm.stop()
    checked = chronicle("eval", "score", "nightly", "--scorer", "check", env=env, timeout=240)
    assert checked.returncode == 0, checked.stderr
    assert [line.split()[1:4] for line in checked.stdout.splitlines()] == [
        ["hello", "check", "pass"],
        ["sum", "check", "pass"],  # answer.txt is only in the recorded change
    ]
    offline = latest_scores(await store.read(ids[0]))[("check", 2)]
    assert offline.payload["score_label"] == "pass"
    assert len(fake_llm.requests) == 4


def test_a_bad_suite_runs_nothing(tmp_path: Path, app_database_url: str) -> None:
    suite = tmp_path / "bad.yaml"
    suite.write_text("name: s\ntasks:\n  - {id: a, prompt: x, files: {../x: y}}\n")
    env = agent_environment(None, app_database_url, tmp_path)
    ran = chronicle("eval", "run", str(suite), env=env)
    assert ran.returncode == 2
    assert "task 'a', field 'files': file path '../x' leaves the workspace" in ran.stderr
