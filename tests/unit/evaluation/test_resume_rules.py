"""Which recorded sessions a resumed run runs again, and the options it continues with."""

from __future__ import annotations

import json
import uuid

from app.evaluation.running import RunOptions, interrupted, recorded_plan
from app.evaluation.sql.evaluation_rows import RunAttempt


def attempt(status: str | None, reason: str = "", *, claimed: bool = False,
            plan: RunOptions | None = None) -> RunAttempt:  # fmt: skip
    return RunAttempt(
        session_id=uuid.uuid4(), task_id="t", epoch=1, attempt=1, resume=0, status=status,
        state_reason=reason, claimed=claimed, scored=False, workspace=None,
        plan=None if plan is None else json.dumps(plan.plan()),
    )  # fmt: skip


def test_a_session_mid_flight_is_run_again_and_an_ended_one_is_not() -> None:
    assert interrupted(attempt("working"))  # its process died
    assert interrupted(attempt(None))  # died before the controller said anything
    assert interrupted(attempt("stopped", "interrupted by SIGINT"))
    assert interrupted(attempt("stopped", "interrupted"))
    assert not interrupted(attempt("working", claimed=True))  # another process runs it
    for ended in ("finished", "limit", "error", "awaiting_user_input"):
        assert not interrupted(attempt(ended))
    assert not interrupted(attempt("stopped", "the user stopped it"))


def test_a_session_that_stopped_its_run_on_a_configuration_error_is_run_again() -> None:
    stopped = attempt("error", "the model call failed: the model provider refused the key")
    assert interrupted(stopped.model_copy(update={"stopped_by": "refused the key"}))


def test_a_resume_continues_with_the_newest_recorded_plan() -> None:
    first = RunOptions(name="n", epochs=2, concurrency=3, model="openai/a", suite="/s.yaml")
    second = first.model_copy(update={"model": "openai/b"})
    plan = recorded_plan([attempt("finished", plan=first), attempt("finished", plan=second),
                          attempt("working")])  # fmt: skip
    assert plan is not None
    assert (plan.epochs, plan.concurrency, plan.model, plan.suite) == (2, 3, "openai/b", "/s.yaml")
    assert recorded_plan([attempt("working")]) is None
