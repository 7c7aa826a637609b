"""A recorded external session read for its replay (``chronicle record --replay``): its model
calls, loaded once when the replay starts, and requests in the form ``chronicle replay``
compares them in (``app.replay.requests.ModelRequest``).

The recording is any session of agent ``external`` (the gateway's, ``chronicle record``'s):
its ``llm.call`` events in log order, each served in turn, except those that answered nothing
(``interrupted``, ``lost``: the client asked again). A replay keeps the payloads of the
calls it serves, not their prompts: a request's messages are read back from the store only
to report a difference.

What was redacted from it is followed as ``chronicle replay`` follows it
(``app.replay.redactions``): a call with a part redacted, or whose prompt keeps a message
redacted from an earlier call, cannot be served (``blocked``), and a redacted end of the
recorded command cannot be compared (``redacted_outcome``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from app.events.commitment import markers_in
from app.events.llm import ANSWERED_NOTHING
from app.events.prompts import whole_prompt
from app.events.session_config import SessionConfig
from app.external.agent_command import RecordError
from app.external.sessions import EXTERNAL_AGENT
from app.llm.gateway import PreparedRequest
from app.replay.divergence import RedactedDivergence, RequestDivergence, redacted
from app.replay.redactions import RedactedParts
from app.replay.requests import ModelRequest, compare_requests
from app.store import EventStore, RecordedEvent

#: Events read at a time while loading a recording.
PAGE = 1000
#: Parameters recorded beside a call's own that its fingerprint leaves out.
NOT_FINGERPRINTED = ("base_url", "stream")
#: Parts of the recorded command's last ``agent.state`` its replay's end is compared with.
OUTCOME_PATHS = frozenset({"", "/state", "/exit_code"})


@dataclass(frozen=True)
class RecordedCalls:
    """An external session's model calls, as a replay serves them."""

    session_id: UUID
    title: str
    #: every llm.call of the log, in order (a call's prompt may keep messages of the one
    #: before it: ``app.events.prompts``)
    calls: list[RecordedEvent]
    #: those a replay serves, in order
    served: list[RecordedEvent]
    #: the recorded command's last ``agent.state`` (state, exit code, reason), if any
    outcome: tuple[str | None, int | None, str] = (None, None, "")
    by_seq: dict[int, RecordedEvent] = field(default_factory=dict)
    #: seq of the ``agent.state`` ``outcome`` is read from (None: none)
    outcome_seq: int | None = None
    #: what was redacted from it (``app.replay.redactions``)
    redacted: RedactedParts = field(default_factory=RedactedParts)

    def blocked(self, step: int) -> RedactedDivergence | None:
        """The ``redacted`` divergence at model call ``step`` (1-based, one the recording
        has) when its recorded call cannot be served, else None."""
        return self.redacted.unservable(step, self.served[step - 1].seq)

    def redacted_outcome(self, step: int) -> RedactedDivergence | None:
        """The ``redacted`` divergence after model call ``step`` when how the recorded
        command ended (its state or exit code) was redacted, else None: a placeholder
        compared with the replay's end would say nothing true."""
        if self.outcome_seq is None:
            return None
        parts = [part for part in self.redacted.of(self.outcome_seq) if part.path in OUTCOME_PATHS]
        if not parts:
            return None
        lead = f"after model call {step}, how the command ended cannot be compared"
        return redacted(step, self.outcome_seq, parts, lead)

    def prompt_of(self, seq: int) -> list[str]:
        """The content hashes of the whole prompt of the recorded call at ``seq``."""
        previous: list[str] | None = None
        for call in self.calls:
            previous = whole_prompt(call.payload, previous)
            if call.seq == seq:
                return previous
        raise KeyError(seq)


def external_config(created: RecordedEvent | None) -> SessionConfig | None:
    """The configuration of an external session's ``session.created``, else None."""
    if created is None or created.kind != "session.created":
        return None
    try:
        config = SessionConfig.of_payload(created.payload)
    except ValidationError:
        return None
    return config if config.agent == EXTERNAL_AGENT else None


async def load_recording(store: EventStore, session_id: UUID) -> RecordedCalls:
    """The recording ``session_id``; ``RecordError`` when it is not one to replay so."""
    head = await store.read(session_id, limit=1)
    if not head:
        raise RecordError(f"there is no session {session_id}; `chronicle sessions` lists them")
    config = external_config(head[0])
    if config is None and markers_in(head[0].stored_payload):
        raise RecordError(
            f"session {session_id} cannot be replayed: its configuration (seq 1) was redacted, "
            "so what it was recorded with is gone (`chronicle verify` lists the redaction)"
        )
    if config is None:
        raise RecordError(
            f"session {session_id} is not a recorded external agent's session (its "
            "session.created does not say agent 'external'); replay a session of Chronicle's "
            "own agent with `chronicle replay`"
        )
    replay_of = head[0].payload.get("replay_of") or (config.replay and config.replay.of)
    if replay_of:
        raise RecordError(
            f"session {session_id} is itself a replay; replay the session it replays "
            f"({replay_of}) instead"
        )
    calls: list[RecordedEvent] = []
    outcome: tuple[str | None, int | None, str] = (None, None, "")
    outcome_seq: int | None = None
    redactions = RedactedParts()
    after = 0
    while page := await store.read(session_id, after_seq=after, limit=PAGE):
        after = page[-1].seq
        for event in page:
            redactions.add(event)
            if event.kind == "llm.call":
                calls.append(event)
            elif event.kind == "agent.state" and event.source == "agent":
                payload = event.payload
                outcome = (
                    payload.get("state"),
                    payload.get("exit_code"),
                    str(payload.get("reason", "")),
                )
                outcome_seq = event.seq
    served = [call for call in calls if call.payload.get("error_kind") not in ANSWERED_NOTHING]
    return RecordedCalls(
        session_id=session_id,
        title=str(head[0].payload.get("title", "")),
        calls=calls,
        served=served,
        outcome=outcome,
        by_seq={call.seq: call for call in served},
        outcome_seq=outcome_seq,
        redacted=redactions,
    )


async def stored_request(
    store: EventStore, payload: Mapping[str, Any], prompt: Sequence[str]
) -> ModelRequest:
    """A recorded call's request, its messages and tools read back from the store."""
    tools_hash = payload.get("tools")
    stored = await store.read_messages([*prompt, *([tools_hash] if tools_hash else [])])
    params = {
        key: value
        for key, value in (payload.get("params") or {}).items()
        if key not in NOT_FINGERPRINTED
    }
    return ModelRequest(
        model=str(payload.get("model", "")),
        params=params,
        messages=[stored[key] for key in prompt if key in stored],
        tools=list((stored.get(tools_hash) or {}).get("tools", [])) if tools_hash else [],
        fingerprint=str(payload.get("fingerprint", "")),
    )


def prepared_request(model: str, request: PreparedRequest) -> ModelRequest:
    """A request the replayed agent makes, as prepared (masked, hashed) by the gateway."""
    return ModelRequest(
        model=model,
        params=request.params,
        messages=request.messages[: request.size],
        tools=request.tools,
        fingerprint=request.fingerprint,
    )


async def request_difference(
    store: EventStore, recording: RecordedCalls, step: int, recorded_seq: int, new: ModelRequest
) -> RequestDivergence:
    """What differs between the recorded call at ``recorded_seq`` and ``new`` (whose
    fingerprint differs from it), as ``chronicle replay`` reports it."""
    recorded = recording.by_seq[recorded_seq]
    old = await stored_request(store, recorded.payload, recording.prompt_of(recorded_seq))
    difference = compare_requests(step, recorded_seq, old, new)
    if difference is None:  # the same fingerprint: not a difference (never asked so)
        raise ValueError(f"model call {step} matches its recorded request")
    return difference
