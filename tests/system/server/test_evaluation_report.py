"""An evaluation run's report over HTTP: an admin reads `chronicle eval report`'s numbers;
anyone else, and an unknown run, get 404."""

from __future__ import annotations

import uuid

import httpx

from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Task
from app.events import AgentState, EvalScore, Event, Finish, LlmCall, Message, SessionCreated
from app.events.masking import SecretMasker
from app.store import EventStore
from tests.support.chronicle_server import ServerProcess


async def record(store: EventStore, run: str, task: str, label: str) -> None:
    """A finished session of ``run`` scored ``label`` (what `chronicle eval run` records)."""
    events: list[Event] = [
        SessionCreated(config=evaluation_config(run, Task(id=task, prompt="p"), 1)),
        Message(content="p"),
        LlmCall(model="m", fingerprint="f", cost_usd=0.5),
        Finish(message="done", cause=3),
        AgentState(state="finished"),
    ]
    events.append(
        EvalScore(name="finished", scorer_version=1, score_label=label,
                  score_value=float(label == "pass"), explanation="e",
                  scored_seq=len(events), evaluation_run=run)
    )  # fmt: skip
    await store.append(uuid.uuid4(), events, expected_seq=0)


async def test_an_admin_reads_a_runs_report_and_nobody_else(shared_server: ServerProcess) -> None:
    url = shared_server.env["CHRONICLE_DATABASE_URL"]
    async with await EventStore.open(url, masker=SecretMasker({})) as store:
        await record(store, "nightly", "a", "pass")
        await record(store, "nightly", "b", "fail")
    admin = shared_server.token("evaluator", admin=True)
    user = shared_server.token("someone")
    async with httpx.AsyncClient(base_url=shared_server.url) as client:
        report = await client.get(
            "/api/evaluations/nightly/report", headers={"Authorization": f"Bearer {admin}"}
        )
        assert report.status_code == 200, report.text
        body = report.json()
        assert (body["run"], body["total"], body["passed"], body["pass_rate"]) == (
            "nightly", 2, 1, 0.5,
        )  # fmt: skip
        for token, run in ((user, "nightly"), (admin, "weekly")):
            missing = await client.get(
                f"/api/evaluations/{run}/report", headers={"Authorization": f"Bearer {token}"}
            )
            assert missing.status_code == 404
            assert missing.headers["content-type"] == "application/problem+json"
            assert "nightly" not in missing.text or run == "nightly"
