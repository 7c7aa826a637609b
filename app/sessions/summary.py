"""A line per session for people: what it was, how it ended, what it cost.

A session whose last state says the agent is working while no process runs it (its process
died: kill -9, a crash, a lost machine) is shown as ``interrupted``, never ``running``.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel

from app.store import EventStore
from app.store.session_rows import latest_sessions

#: States in which the controller is working on the session: true only while a process runs it.
WORKING_STATES = frozenset({"loading", "running", "rate_limited"})
TITLE_WIDTH = 80


def one_line_title(text: str, width: int = TITLE_WIDTH) -> str:
    """A task's first non-empty line, cut to ``width`` characters with an ellipsis."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= width else first[: width - 1] + "…"


def format_cost(known_usd: float, unpriced_calls: int, calls: int) -> str:
    """``$0.0123``; ``-`` when no call's price is known; ``≥$0.0123`` when some are not."""
    if unpriced_calls and unpriced_calls == calls:
        return "-"
    return ("≥" if unpriced_calls else "") + f"${known_usd:.4f}"


class SessionSummary(BaseModel):
    id: UUID
    created_at: datetime
    events: int
    title: str | None
    state: str | None
    model_calls: int
    #: The known total; None when no call's price is known (a model without a price).
    cost_usd: float | None
    #: Calls whose price is unknown: ``cost_usd`` is then a lower bound.
    unpriced_calls: int = 0

    def cost_text(self) -> str:
        return format_cost(self.cost_usd or 0.0, self.unpriced_calls, self.model_calls)


async def recent_sessions(store: EventStore, limit: int = 20) -> list[SessionSummary]:
    summaries = []
    for row in await latest_sessions(store, limit):
        state = row.state
        if state in WORKING_STATES and not row.claimed:
            state = "interrupted"
        unknown = row.model_calls > 0 and row.unpriced_calls == row.model_calls
        summaries.append(
            SessionSummary(
                id=row.id,
                created_at=row.created_at,
                events=row.last_seq,
                title=one_line_title(row.title) if row.title else row.title,
                state=state,
                model_calls=row.model_calls,
                cost_usd=None if unknown else row.known_cost_usd,
                unpriced_calls=row.unpriced_calls,
            )
        )
    return summaries
