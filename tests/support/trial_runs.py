"""An API evaluation run of one trial whose first trial's claim is taken, for the tests of
what a sweep or a later request does with a trial a dead process left (real PostgreSQL)."""

from __future__ import annotations

import uuid

from app.evaluation.api_runs import RunPlan, trial_session_id
from app.evaluation.sql.evaluation_runs import claim_trial
from app.evaluation.suite import Suite, Task
from app.sessions.sql.users import add_user
from app.store import EventStore

TASK = Task(id="six-sevens", prompt="What is six times seven?", answer="42")


async def claimed_trial(store: EventStore, prefix: str) -> tuple[RunPlan, uuid.UUID]:
    """A new user's run (named ``prefix-…``) of ``TASK`` once, its only trial claimed for
    that user as ``start_run`` claims it, nothing recorded yet."""
    owner = await add_user(store, f"ada-{uuid.uuid4().hex[:8]}")
    plan = RunPlan(
        name=f"{prefix}-{uuid.uuid4().hex[:8]}", suite=Suite(name="s", tasks=[TASK]),
        model="openai/scripted", base_url=None, runtime="local", trials=1, concurrency=1,
        owner=owner.id, user=owner.name,
    )  # fmt: skip
    session = trial_session_id(plan.key, TASK.id, 1)
    assert await claim_trial(store, session, owner.id, None) == "claimed"
    return plan, session
