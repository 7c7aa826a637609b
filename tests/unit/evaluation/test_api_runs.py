"""What an API evaluation run accepts and how its progress reads: the suite checked as the
command line checks it, what the API refuses that the command line takes (setup commands, a
repository outside the workspace roots, more concurrency than a user's cap), the trials'
order, the recorded config, and the status from the counts."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.evaluation.api_runs import (
    EvaluationRequest,
    RunRequestError,
    plan_run,
    progress_of,
    trial_config,
    trial_session_id,
)
from app.evaluation.sql.evaluation_runs import RunRow
from app.sessions.run_config import DEFAULT_MAX_ITERATIONS

OWNER = uuid.uuid4()


def settings(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(data_dir=tmp_path, llm_model="openai/recorded", llm_api_key="sk-x", **extra)


def request(*tasks: dict[str, Any], **extra: Any) -> EvaluationRequest:
    return EvaluationRequest(name="run-1", suite={"name": "s", "tasks": list(tasks)}, **extra)


def refused(config: Settings, body: EvaluationRequest) -> str:
    with pytest.raises(RunRequestError) as caught:
        plan_run(config, body, OWNER, "ada")
    return str(caught.value)


def test_a_bad_suite_is_one_error_naming_the_task_and_field(tmp_path: Path) -> None:
    said = refused(settings(tmp_path), request({"id": "a"}, {"id": "b", "prompt": "p", "x": 1}))
    assert "task 'a', field 'prompt'" in said and "task 'b', field 'x'" in said


def test_setup_commands_are_refused_they_would_run_on_the_server(tmp_path: Path) -> None:
    said = refused(settings(tmp_path), request({"id": "a", "prompt": "p", "setup": "id"}))
    assert "task 'a', field 'setup'" in said and "outside any sandbox" in said


def test_a_repository_must_be_under_a_workspace_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "repo").mkdir(parents=True)
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    config = settings(tmp_path, workspace_roots=[root])
    for repo in (str(outside), str(root / "escape"), "repo", str(root / "missing")):
        said = refused(config, request({"id": "a", "prompt": "p", "repo": repo}))
        assert "task 'a', field 'repo'" in said, repo
    no_roots = refused(settings(tmp_path), request({"id": "a", "prompt": "p", "repo": "/"}))
    assert "no workspace_roots" in no_roots
    plan = plan_run(config, request({"id": "a", "prompt": "p", "repo": str(root / "repo")}),
                    OWNER, "ada")  # fmt: skip
    assert plan.suite.tasks[0].repo == str((root / "repo").resolve())


def test_concurrency_may_not_exceed_a_users_cap(tmp_path: Path) -> None:
    config = settings(tmp_path, server_max_active_sessions=3)
    said = refused(config, request({"id": "a", "prompt": "p"}, concurrency=4))
    assert "3 or fewer" in said
    assert plan_run(config, request({"id": "a", "prompt": "p"}, concurrency=3), OWNER, "ada")


def test_trials_run_epoch_by_epoch_and_record_the_request(tmp_path: Path) -> None:
    config = settings(tmp_path)
    plan = plan_run(
        config,
        request({"id": "a", "prompt": "p", "limits": {"max_iterations": 7}},
                {"id": "b", "prompt": "q"}, trials=2),
        OWNER, "ada",
    )  # fmt: skip
    assert plan.total == 4 and (plan.model, plan.runtime) == ("openai/recorded", "local")
    assert [(t.id, e) for t, e in plan.trial_order()] == [("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    a, b = plan.suite.tasks
    recorded = trial_config(config, plan, a, 2, tmp_path / "ws").stored()
    # recorded under the owner's name for it: another user's run-1 is another run
    assert (recorded["evaluation_run"], recorded["evaluation_task"]["id"]) == (
        f"run-1@{OWNER}",
        "a",
    )
    assert (recorded["evaluation_epoch"], recorded["max_iterations"]) == (2, 7)
    assert recorded["evaluation_request"]["owner"] == str(OWNER)
    assert "sk-x" not in str(recorded)
    assert trial_config(config, plan, b, 1, tmp_path).max_iterations == DEFAULT_MAX_ITERATIONS
    # whoever starts a trial gives it the same session id: claiming it twice is a conflict
    assert trial_session_id("run-1", "a", 2) == trial_session_id("run-1", "a", 2)
    ids = {trial_session_id("run-1", t.id, e) for t, e in plan.trial_order()}
    assert len(ids | {trial_session_id("run-2", "a", 1)}) == 5


def row(started: int, begun: int, scored: int, passed: int, request: Any) -> RunRow:
    return RunRow(name="r", created_at=datetime.now(UTC), started=started, begun=begun,
                  scored=scored, passed=passed, owner=None, user_name=None, model="m",
                  request=request)  # fmt: skip


def test_status_from_the_counts() -> None:
    api = {"suite": {"tasks": [{}, {}]}, "trials": 2, "concurrency": 1}
    assert progress_of(row(1, 0, 0, 0, api)).status == "queued"
    assert progress_of(row(1, 1, 0, 0, api)).status == "running"
    running = progress_of(row(3, 3, 2, 1, api))
    assert (running.status, running.total, running.done, running.failed) == ("running", 4, 2, 1)
    assert progress_of(row(4, 4, 4, 3, api)).status == "finished"
    # a command-line run: as many trials as it recorded, its request unknown
    cli = progress_of(row(2, 2, 2, 2, None))
    assert (cli.status, cli.total, cli.trials) == ("finished", 2, None)


def test_agent_commands_are_refused_they_would_run_on_the_server(tmp_path: Path) -> None:
    said = refused(
        settings(tmp_path), request({"id": "a", "prompt": "p", "agent": {"command": ["id"]}})
    )
    assert "task 'a', field 'agent'" in said and "outside any sandbox" in said


def test_a_suite_may_come_as_its_yaml_text_and_its_problems_name_their_lines(
    tmp_path: Path,
) -> None:
    text = "name: s\ntasks:\n  - id: a\n    prompt: hello\n"
    plan = plan_run(settings(tmp_path), EvaluationRequest(name="r", suite=text), OWNER, "ada")
    assert [task.id for task in plan.suite.tasks] == ["a"]
    bad = EvaluationRequest(name="r", suite=text + "    files: {'../x': y}\n")
    with pytest.raises(RunRequestError) as caught:
        plan_run(settings(tmp_path), bad, OWNER, "ada")
    [problem] = caught.value.problems
    assert (problem.line, problem.where) == (5, "task 'a', field 'files'")
