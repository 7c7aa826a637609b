"""What the session page says of a session that is an evaluation trial: its run (by the key
its report is read by, and the name its owner gave it), task, epoch and attempt, and whether
it passed, by the rule the reports use (``report.session_passed``)."""

from __future__ import annotations

from app.evaluation.report import session_passed
from app.evaluation.sql.trial_scores import counted_labels
from app.events.session_config import SessionConfig
from app.sessions.summary import SessionSummary, TrialFacts
from app.store import EventStore


async def with_trial(store: EventStore, summary: SessionSummary) -> SessionSummary:
    """``summary`` with its ``trial`` filled in when the session is a trial of a run; any
    other session's summary as it is."""
    if summary.evaluation_run is None:
        return summary
    head = await store.read(summary.id, limit=1)
    if not head or head[0].kind != "session.created":
        return summary
    trial = SessionConfig.of_payload(head[0].payload).evaluation
    if trial is None or trial.run is None:
        return summary
    labels = await counted_labels(store, summary.id)
    scored = any(label in ("pass", "fail", "error") for label in labels.values())
    name = (trial.request or {}).get("name") or trial.run
    facts = TrialFacts(
        run=trial.run,
        name=str(name),
        task=str((trial.task or {}).get("id") or summary.id),
        epoch=trial.epoch or 1,
        attempt=trial.attempt or 1,
        passed=session_passed(labels) if scored else None,
        verdicts=labels,
    )
    return summary.model_copy(update={"trial": facts})
