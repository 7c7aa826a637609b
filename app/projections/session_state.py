"""``session_state``: one row per session, what the session list and SQL readers need.

Everything comes from the session's own events, in seq order:

- ``session.created``: title, agent, model, runtime, workspace (its ``config``), and the
  session's origin (``replay_of``; ``forked_from`` and ``evaluation_run`` where a later kind of
  session records them, in the payload or in its config);
- ``agent.state`` from the controller (source ``agent``): the state, its reason, the
  ``status`` (below) and when the agent stopped working (``ended_at``). A user's steering
  (source ``user``) is a request the controller answers with its own state, so it is not one;
- ``llm.call``: model calls, failures, tokens and cost, and the model actually called. A
  call a replay served from its recording (``replayed_from``) called no model: it counts in
  ``served_calls`` and ``served_cost_usd`` (the recording's cost, not spent again) only, so
  a replay's ``cost_usd`` is 0 and spend is counted once, in the recorded session;
- actions (``steps``), ``error`` events (``errors``), ``runtime.ready`` / ``runtime.restarted``
  (the runtime that answered);
- ``redaction`` of ``session.created`` (docs/erasure.md): the copies this row made of what
  went (the title reads ``[redacted]``, a config field is emptied), so the list does not keep
  what the log no longer holds.

``status`` is ``working`` while the controller last said loading, running or rate_limited; a
reader shows ``running`` while a process holds the session's claim and ``interrupted``
otherwise (its process died: that is no event, so it is decided when reading, see
app/sessions/summary.py). ``stopped`` at the iteration or cost limit is ``limit``.

The platform's audit log (app/events/platform_audit.py) is a stream of the same table but no
session: it has no row.

Cost is exact: each call's ``cost_usd`` (a JSON number) as a Decimal, summed, so the rows do
not depend on how events were batched. It is None when no call has a price and some have
none, never a misleading zero.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Context, Decimal
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from app.events import ACTION_KINDS
from app.events.conversation import limit_reached
from app.events.llm import MAYBE_PAID
from app.events.platform_audit import PLATFORM_LOG_ID
from app.events.session_config import EvaluationTrial, ReplayOrigin, SessionConfig
from app.events.stored_form import needs_escape
from app.events.usage import token_count
from app.projections.base import Projection
from app.projections.sql.projection_store import ProjectionRows, Table
from app.store import RecordedEvent

#: The controller's states while it works on the session.
WORKING_STATES = frozenset({"loading", "running", "rate_limited"})
STATUSES = (
    "working",
    "finished",
    "awaiting_user_input",
    "paused",
    "stopped",
    "limit",
    "error",
    "erased",
)
#: What PostgreSQL text cannot hold; shown as U+FFFD in the table (the log keeps the original).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
#: Sums of costs without rounding (a float's decimal has at most 17 significant digits).
EXACT = Context(prec=80)


@dataclass(slots=True)
class SessionStateRow:
    """One row of ``session_state``; the fields are its columns, in order."""

    session_id: UUID
    title: str | None
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None = None
    status: str | None = None
    agent_state: str | None = None
    state_reason: str | None = None
    agent: str | None = None
    model: str | None = None
    runtime: str | None = None
    workspace: str | None = None
    steps: int = 0
    model_calls: int = 0
    failed_calls: int = 0
    priced_calls: int = 0
    unpriced_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: Decimal | None = Decimal(0)
    errors: int = 0
    last_seq: int = 0
    replay_of: UUID | None = None
    forked_from: UUID | None = None
    evaluation_run: str | None = None
    served_calls: int = 0
    served_cost_usd: Decimal | None = None
    erased_at: datetime | None = None


SESSION_STATE: Table[SessionStateRow] = Table(
    name="session_state",
    key="session_id",
    columns=(
        ("session_id", "uuid"),
        ("title", "text"),
        ("created_at", "timestamptz"),
        ("updated_at", "timestamptz"),
        ("ended_at", "timestamptz"),
        ("status", "text"),
        ("agent_state", "text"),
        ("state_reason", "text"),
        ("agent", "text"),
        ("model", "text"),
        ("runtime", "text"),
        ("workspace", "text"),
        ("steps", "integer"),
        ("model_calls", "integer"),
        ("failed_calls", "integer"),
        ("priced_calls", "integer"),
        ("unpriced_calls", "integer"),
        ("input_tokens", "bigint"),
        ("output_tokens", "bigint"),
        ("cached_tokens", "bigint"),
        ("cost_usd", "numeric"),
        ("errors", "integer"),
        ("last_seq", "integer"),
        ("replay_of", "uuid"),
        ("forked_from", "uuid"),
        ("evaluation_run", "text"),
        ("served_calls", "integer"),
        ("served_cost_usd", "numeric"),
        ("erased_at", "timestamptz"),
    ),
    row_type=SessionStateRow,
)


def status_of(state: str, reason: str, limit: str | None = None) -> str:
    """The status an agent state (with its reason, and the limit it names) puts the session
    in; a stop recorded before ``agent.state`` named its limit is read by its reason."""
    if state in WORKING_STATES:
        return "working"
    if state == "stopped" and limit_reached(limit, reason) is not None:
        return "limit"
    return state if state in STATUSES else "error"


def storable(value: Any) -> str | None:
    """A payload's text as a text column holds it (None for anything but a string)."""
    if not isinstance(value, str):
        return None
    return UNSTORABLE.sub("\ufffd", value) if needs_escape(value) else value


def uuid_or_none(value: Any) -> UUID | None:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(value) if isinstance(value, str) else None
    except ValueError:
        return None


#: What a bigint column holds: a session's total stops there rather than fail the write
#: (and with it the projection, for every session after it).
BIGINT_MAX = 2**63 - 1


def count(value: Any) -> int:
    """A token count from a payload: 0 for anything that is not one by the rule the views
    read counts by (``app.events.usage``: unknown, e.g. ``1e999`` or negative, is not added)."""
    return (token_count(value) or 0) if isinstance(value, int) else 0


def added(total: int, value: Any) -> int:
    """``total`` plus the count ``value``, at most ``BIGINT_MAX``."""
    return min(total + count(value), BIGINT_MAX)


def exact_cost(value: Any) -> Decimal | None:
    """A call's ``cost_usd`` as the decimal its JSON text says (None when unknown)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


class SessionState(Projection):
    name = "session_state"
    #: 2: calls served from a recording are not model calls (migration 0008)
    #: 3: odd usage counts are unknown, not added; a lost call's cost is unknown, not free
    version = 3
    tables = (SESSION_STATE,)

    def keys(self, event: RecordedEvent) -> Iterable[tuple[Table[Any], Any]]:
        if event.session_id == PLATFORM_LOG_ID:
            erased = _erased_session(event)
            return () if erased is None else ((SESSION_STATE, erased),)
        return ((SESSION_STATE, event.session_id),)

    def apply(self, rows: ProjectionRows, event: RecordedEvent) -> None:
        if event.session_id == PLATFORM_LOG_ID:
            # the platform's audit log is a stream, not a session: never listed; its record
            # of an erasure is what says a session's row is erased
            erased = _erased_session(event)
            if erased is not None:
                rows.put(SESSION_STATE, _erased(rows.get(SESSION_STATE, erased), erased, event))
            return
        row = rows.get(SESSION_STATE, event.session_id)
        if row is not None and event.seq <= row.last_seq:
            # applied already: the same events back at new positions (an archived session
            # imported again after its months were dropped) must not count twice
            return
        if row is None:
            row = SessionStateRow(
                session_id=event.session_id,
                title=None,
                created_at=event.created_at,
                updated_at=event.created_at,
            )
        row.last_seq = event.seq
        row.updated_at = event.created_at
        fold = FOLDS.get(event.kind)
        if fold is not None:
            fold(row, event)
        elif event.kind in ACTION_KINDS and event.source == "agent":
            row.steps += 1
        rows.put(SESSION_STATE, row)


def _erased_session(event: RecordedEvent) -> UUID | None:
    """The session an ``audit.session_erased`` record of the platform log erased."""
    if event.kind != "audit.session_erased":
        return None
    return uuid_or_none(event.payload.get("session_id"))


def _erased(row: SessionStateRow | None, session_id: UUID, event: RecordedEvent) -> SessionStateRow:
    """The row of an erased session: its counts stay, what it copied of its content goes
    (a rebuild after the erasure has no events to count: its row is bare)."""
    payload = event.payload
    when = _moment(payload.get("erased_at")) or event.created_at
    if row is None:
        row = SessionStateRow(session_id=session_id, title=None, created_at=when, updated_at=when)
    row.status, row.erased_at, row.updated_at = "erased", when, when
    row.title = row.agent_state = row.state_reason = None
    row.agent = row.model = row.runtime = row.workspace = None
    row.last_seq = max(row.last_seq, count(payload.get("events")))
    return row


def _moment(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _created(row: SessionStateRow, event: RecordedEvent) -> None:
    payload = event.payload
    try:
        config = SessionConfig.of_payload(payload)
    except ValidationError:  # the projection goes on past any payload: its row is bare
        config = SessionConfig()
    replay, trial = config.replay or ReplayOrigin(), config.evaluation or EvaluationTrial()
    # no producer writes a config ``forked_from``: read where it would be, as always
    forked_from = (config.model_extra or {}).get("forked_from")
    row.title = storable(payload.get("title"))
    row.agent = storable(config.agent)
    row.model = storable(config.model)
    row.runtime = storable(config.runtime)
    row.workspace = storable(config.workspace)
    row.replay_of = uuid_or_none(payload.get("replay_of") or replay.of)
    row.forked_from = uuid_or_none(payload.get("forked_from") or forked_from)
    row.evaluation_run = storable(payload.get("evaluation_run") or trial.run)


def _agent_state(row: SessionStateRow, event: RecordedEvent) -> None:
    if event.source != "agent":
        return
    state = storable(event.payload.get("state")) or ""
    reason = storable(event.payload.get("reason")) or ""
    row.agent_state = state
    row.state_reason = reason
    row.status = status_of(state, reason, event.payload.get("limit"))
    row.ended_at = None if row.status == "working" else event.created_at


def _llm_call(row: SessionStateRow, event: RecordedEvent) -> None:
    payload = event.payload
    if payload.get("replayed_from") is not None:
        _served_call(row, payload)
        return
    row.model_calls += 1
    model = storable(payload.get("model"))
    if model:
        row.model = model
    usage = payload.get("usage")
    if isinstance(usage, dict):
        row.input_tokens = added(row.input_tokens, usage.get("prompt_tokens"))
        row.output_tokens = added(row.output_tokens, usage.get("completion_tokens"))
        row.cached_tokens = added(row.cached_tokens, usage.get("cached_tokens"))
    failed = payload.get("error") is not None
    cost = exact_cost(payload.get("cost_usd"))
    if failed:
        row.failed_calls += 1
    if cost is not None:
        row.priced_calls += 1
        row.cost_usd = EXACT.add(row.cost_usd or Decimal(0), cost)
    elif not failed or payload.get("error_kind") in MAYBE_PAID:
        row.unpriced_calls += 1
        if row.priced_calls == 0:
            row.cost_usd = None


def _served_call(row: SessionStateRow, payload: dict[str, Any]) -> None:
    """A replay's call answered from the recording: no model was called, nothing spent."""
    row.served_calls += 1
    cost = exact_cost(payload.get("cost_usd"))
    if cost is not None:
        row.served_cost_usd = EXACT.add(row.served_cost_usd or Decimal(0), cost)


def _error(row: SessionStateRow, event: RecordedEvent) -> None:
    row.errors += 1


def _runtime(row: SessionStateRow, event: RecordedEvent) -> None:
    runtime = storable(event.payload.get("runtime"))
    if runtime:
        row.runtime = runtime


#: What a row copies from ``session.created`` (seq 1), by the JSON Pointer it is at.
COPIED_FROM_CREATION = {
    "/title": "title",
    "/config/workspace": "workspace",
    "/config/model": "model",
    "/config/agent": "agent",
    "/config/runtime": "runtime",
}


def _redaction(row: SessionStateRow, event: RecordedEvent) -> None:
    payload = event.payload
    if payload.get("target_seq") != 1:
        return
    path = str(payload.get("path") or "")
    for pointer, field in COPIED_FROM_CREATION.items():
        if path == "" or pointer == path or pointer.startswith(path + "/"):
            setattr(row, field, "[redacted]" if field == "title" else None)


FOLDS = {
    "session.created": _created,
    "redaction": _redaction,
    "agent.state": _agent_state,
    "llm.call": _llm_call,
    "error": _error,
    "runtime.ready": _runtime,
    "runtime.restarted": _runtime,
}
