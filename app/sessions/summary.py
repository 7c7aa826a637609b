"""A line per session for people: what it was, how it ended, what it cost.

Read from the ``session_state`` projection, brought up to date first when no runner keeps it
current (so the list right after ``chronicle run`` shows the run as it ended). A session
whose agent was working while no process runs it any more (its process died: kill -9, a
crash, a lost machine) is shown as ``interrupted``, never ``running``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, computed_field

from app.agent.steering import Steering, applicable, phase_shown
from app.projections import ProjectionsConfig, SessionState, bring_up_to_date
from app.sessions.sql.session_rows import ListedState, SessionRow, list_sessions
from app.store import EventStore

TITLE_WIDTH = 80


def one_line_title(text: str, width: int = TITLE_WIDTH) -> str:
    """A task's first non-empty line, cut to ``width`` characters with an ellipsis."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= width else first[: width - 1] + "…"


#: How a cost no price is known for is written, by the CLI, the reports and the page
#: (``UNKNOWN_COST`` in app/server/web/format.js); the API says ``null``.
UNKNOWN_COST = "unknown"


def format_cost(cost_usd: float | None, unpriced_calls: int, calls: int) -> str:
    """``$0.0123``; ``≥$0.0123`` when some calls have no price; ``unknown`` when none has
    (``cost_usd`` None); ``$0`` with no model call."""
    if calls == 0:
        return "$0"
    if cost_usd is None:
        return UNKNOWN_COST
    return ("≥" if unpriced_calls else "") + f"${cost_usd:.4f}"


def shown_state(status: str | None, claimed: bool) -> str | None:
    """What a person is told: a working session runs while a process holds its claim and
    was interrupted otherwise; any other status is shown as stored."""
    if status == "working":
        return "running" if claimed else "interrupted"
    return status


class TrialFacts(BaseModel):
    """A session that is a trial of an evaluation run (``app.evaluation.trial_facts``)."""

    #: the run as its report is read (``GET /api/evaluations/{run}/report``)
    run: str
    #: the run's name as its owner gave it
    name: str
    task: str
    epoch: int
    attempt: int
    #: whether every verdict on it passed (None: not scored yet)
    passed: bool | None
    #: scorer name -> the label of its score that counts
    verdicts: dict[str, str | None]


class SessionSummary(BaseModel):
    id: UUID
    created_at: datetime
    updated_at: datetime
    #: When the agent last stopped working (None while it works).
    ended_at: datetime | None
    events: int
    title: str | None
    #: running, interrupted, finished, awaiting_user_input, paused, stopped, limit, error
    #: (None: no agent state recorded yet).
    state: str | None
    #: The reason the agent gave for its state, as recorded.
    reason: str | None
    agent: str | None
    model: str | None
    runtime: str | None
    workspace: str | None
    steps: int
    model_calls: int
    failed_calls: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    #: The known total; None when no call's price is known (a model without a price).
    cost_usd: float | None
    #: Calls whose price is unknown: ``cost_usd`` is then a lower bound.
    unpriced_calls: int = 0
    errors: int
    replay_of: UUID | None
    forked_from: UUID | None
    evaluation_run: str | None
    #: In a list (``GET /api/sessions``): a trial's task and epoch (its run is
    #: ``evaluation_run``), and how a replay went: ``matched``, ``diverged`` (it stopped at a
    #: divergence) or ``differed`` (a positional replay whose requests differed); None where
    #: it does not apply, and in one session's summary.
    task: str | None = None
    epoch: int | None = None
    replay_outcome: Literal["matched", "diverged", "differed"] | None = None
    #: One session's summary (``GET /api/sessions/{id}``) of a trial: its run, task, epoch
    #: and verdict (None in lists, and for any other session).
    trial: TrialFacts | None = None
    #: One session's summary of a fork: the seq of ``forked_from`` its copy ends at (its own
    #: events follow it); None in lists, and for any other session.
    forked_at: int | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def steering(self) -> list[Steering]:
        """What of pause, stop and resume applies to the session as shown (the page enables
        those buttons; the API refuses the others with 409): ``app.agent.steering``."""
        return applicable(phase_shown(self.state))

    def cost_text(self) -> str:
        return format_cost(self.cost_usd, self.unpriced_calls, self.model_calls)

    @classmethod
    def of(cls, row: SessionRow) -> SessionSummary:
        return cls.model_validate(summary_fields(dict(row)))


def summary_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """A ``SessionSummary``'s fields from a ``session_state`` row (``SessionRow``'s columns,
    a ``SessionRow`` or the database record itself), so a page of records is validated once,
    as the page, instead of a model per row and another per summary."""
    title = row["title"]
    cost = row["cost_usd"]
    return {
        "id": row["session_id"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "ended_at": row["ended_at"],
        "events": row["last_seq"],
        "title": one_line_title(title) if title else title,
        "state": shown_state(row["status"], row["claimed"]),
        "reason": row["state_reason"],
        "agent": row["agent"],
        "model": row["model"],
        "runtime": row["runtime"],
        "workspace": row["workspace"],
        "steps": row["steps"],
        "model_calls": row["model_calls"],
        "failed_calls": row["failed_calls"],
        "input_tokens": row["input_tokens"],
        "output_tokens": row["output_tokens"],
        "cached_tokens": row["cached_tokens"],
        "cost_usd": float(cost) if cost is not None else None,
        "unpriced_calls": row["unpriced_calls"],
        "errors": row["errors"],
        "replay_of": row["replay_of"],
        "forked_from": row["forked_from"],
        "evaluation_run": row["evaluation_run"],
        "task": row.get("task"),
        "epoch": row.get("epoch"),
        "replay_outcome": row.get("replay_outcome"),
    }


async def recent_sessions(
    store: EventStore,
    limit: int = 20,
    *,
    state: ListedState | None = None,
    model: str | None = None,
    since: datetime | None = None,
    config: ProjectionsConfig | None = None,
) -> list[SessionSummary]:
    """The newest sessions matching the filters, from ``session_state`` brought up to date."""
    await bring_up_to_date(store, SessionState(), config)
    rows = await list_sessions(store, limit=limit, state=state, model=model, since=since)
    return [SessionSummary.of(row) for row in rows]


async def with_fork_point(store: EventStore, summary: SessionSummary) -> SessionSummary:
    """``summary`` with ``forked_at`` filled in when the session is a fork (its
    ``session.created`` says where its copy of the source ends); any other as it is."""
    if summary.forked_from is None:
        return summary
    head = await store.read(summary.id, limit=1)
    at = head[0].payload.get("forked_at") if head and head[0].kind == "session.created" else None
    return summary.model_copy(update={"forked_at": at}) if isinstance(at, int) else summary
