"""Forking a recorded session at a seq: its first events copied into a new session, and its
recorded sandbox actions run again against a real sandbox over the restored workspace.

The copy is a new chain (the store hashes it afresh); each copied event carries
``replayed_from``, the seq it was copied from, so a copied model call is not counted as
spend again, and ``session.created`` names the source (``forked_from``, ``forked_at``); a fork
of a replay is a live session, so its copy drops the replay's ``replay_of`` and mode. An
action whose real observation differs from the recorded one (another kind, exit code or
error) is an environment divergence: the fork goes on, the difference is in its log.

A copy cannot carry a redaction: what the copy holds is hashed afresh, so a placeholder
copied in its place would read as recorded content, with no record saying it went. A fork
whose copy would hold a redacted part is refused, saying which, and a fork before it is
possible. Who sent an event and the session's title (``UNREAD``: the agent reads neither) are
left out of the copy instead.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from app.errors import ChronicleError
from app.events import HANDLED_KINDS, OBSERVATION_KINDS, Action, Event, SessionCreated
from app.events.ids import new_event_id
from app.events.replay import EnvironmentDivergenceEvent
from app.events.session_config import ReplayOrigin, SessionConfig
from app.replay.divergence import describe_parts
from app.replay.redactions import RedactedParts
from app.runtime.protocol import Runtime
from app.store import EventStore, RecordedEvent


class ForkError(ChronicleError):
    """The session cannot be forked at that point; the message says why and what to do."""


class EnvironmentDivergence(BaseModel):
    """A recorded action's observation when it ran again, unlike the recording's."""

    model_config = ConfigDict(frozen=True)

    action_seq: int
    field: str
    recorded: Any
    observed: Any


def prefix_of(events: list[RecordedEvent], at: int) -> list[RecordedEvent]:
    """The events up to ``at``, refusing a cut between an action and its observation (the
    fork would have an action nobody answers) and a copy of a redacted part (see the
    module)."""
    prefix = _cut(events, at)
    redacted = RedactedParts()
    for event in events:
        if event.kind == "redaction":
            redacted.add(event)
    gone = [part for event in prefix for part in redacted.of(event.seq)]
    if gone:
        first = gone[0].seq
        raise ForkError(
            f"the copy up to seq {at} would hold what was redacted ({describe_parts(gone)}), "
            f"and a copy cannot carry a redaction; fork before seq {first}"
            + ("" if first > 2 else " (there is nothing before it to fork)")
        )
    return [_without_unread(event, redacted) for event in prefix]


def _without_unread(event: RecordedEvent, redacted: RedactedParts) -> RecordedEvent:
    """``event`` without its sender or title when they were redacted (not copied as
    placeholders)."""
    user, title = redacted.at(event.seq, "/user"), redacted.at(event.seq, "/title")
    if not (user or title):
        return event
    payload = dict(event.payload)
    if user:
        payload.pop("user", None)
    if title:
        payload["title"] = ""
    return event._replace(payload=payload)


def _cut(events: list[RecordedEvent], at: int) -> list[RecordedEvent]:
    """The events up to ``at``, unless that cuts an action from its observation."""
    if not events or events[0].kind != "session.created":
        raise ForkError("this session has no session.created event; it cannot be forked")
    last = events[-1].seq
    if not 1 < at <= last:
        raise ForkError(f"--at must be between 2 and {last}, the session's last seq")
    prefix = [e for e in events if e.seq <= at]
    answered = {e.cause for e in prefix if e.kind in OBSERVATION_KINDS}
    awaited = frozenset().union(*HANDLED_KINDS.values())
    for event in prefix:
        if event.kind in awaited and event.seq not in answered:
            after = next((e.seq for e in events if e.cause == event.seq), None)
            raise ForkError(
                f"seq {at} falls between the {event.kind} at seq {event.seq} and its "
                f"observation{f' at seq {after}' if after else ''}; fork at a seq after it"
            )
    return prefix


def fork_point(events: list[RecordedEvent], divergence: Any) -> int:
    """Where ``--on-divergence fork`` cuts: just before the recorded event the divergence
    points at (the model call a request or action divergence belongs to), or the whole
    recording for a divergence past its end (``extra_call``, ``outcome``); moved back to the
    nearest seq that is not between an action and its observation."""
    calls = [e.seq for e in events if e.kind == "llm.call"]
    recorded_seq = getattr(divergence, "recorded_seq", None)
    step = getattr(divergence, "step", None)
    if recorded_seq is not None:
        at = recorded_seq - 1
    elif step is not None and divergence.kind != "outcome" and 0 < step <= len(calls):
        at = calls[step - 1] - 1
    else:
        at = events[-1].seq
    while at > 1:
        try:
            _cut(events, at)
        except ForkError:
            at -= 1
            continue
        prefix_of(events, at)  # a copy of a redacted part is refused, saying so
        return at
    raise ForkError("the divergence is at the session's start: there is nothing to fork")


def _typed(event: RecordedEvent) -> Event:
    return event.event()


async def copy_prefix(
    store: EventStore,
    source: UUID,
    fork: UUID,
    prefix: list[RecordedEvent],
    config_changes: dict[str, Any],
) -> None:
    """Append ``prefix`` (the source's first events) as the fork's first events."""
    copies: list[Event] = []
    for event in prefix:
        typed = _typed(event)
        update: dict[str, Any] = {"event_id": new_event_id(), "replayed_from": event.seq}
        if isinstance(typed, SessionCreated):
            update |= {
                "config": _live(typed.config.with_keys(**config_changes)),
                "replay_of": None,
                "forked_from": source,
                "forked_at": prefix[-1].seq,
            }
        copies.append(typed.model_copy(update=update))
    await store.append(fork, copies, expected_seq=0)


def _live(config: SessionConfig) -> SessionConfig:
    """``config`` without a replay's origin and mode: a fork of a replay runs live."""
    replay_keys = ReplayOrigin.stored_keys()
    kept = {key: value for key, value in config.stored().items() if key not in replay_keys}
    return SessionConfig.model_validate(kept)


def _compare(
    action_seq: int, recorded: RecordedEvent, observed: Event
) -> list[EnvironmentDivergence]:
    found: list[EnvironmentDivergence] = []
    if observed.kind != recorded.kind:
        found.append(EnvironmentDivergence(
            action_seq=action_seq, field="kind", recorded=recorded.kind, observed=observed.kind
        ))  # fmt: skip
        return found
    payload = observed.payload()
    for field in ("exit_code", "error_type"):
        if field in recorded.payload or field in payload:
            if recorded.payload.get(field) != payload.get(field):
                found.append(EnvironmentDivergence(
                    action_seq=action_seq, field=field,
                    recorded=recorded.payload.get(field), observed=payload.get(field),
                ))  # fmt: skip
    return found


async def reexecute(runtime: Runtime, prefix: list[RecordedEvent]) -> list[EnvironmentDivergence]:
    """Run the prefix's sandbox actions again, in order, against ``runtime``; what differs."""
    answers = {e.cause: e for e in prefix if e.kind in OBSERVATION_KINDS and e.cause}
    divergences: list[EnvironmentDivergence] = []
    for event in prefix:
        if event.kind not in HANDLED_KINDS["sandbox"] or event.seq not in answers:
            continue
        action = _typed(event)
        assert isinstance(action, Action)
        observed = await runtime.execute(action)
        divergences += _compare(event.seq, answers[event.seq], observed)
    return divergences


def divergence_events(divergences: list[EnvironmentDivergence]) -> list[Event]:
    return [EnvironmentDivergenceEvent(**d.model_dump()) for d in divergences]
