"""The AgentController: a state machine driven only by the session's events.

Every decision is made from the log, so a new process that finds a half-finished session
continues from the right place: an ``llm.call`` whose actions were never appended is turned
into them (the response is recorded, so this is deterministic), pending actions are waited
for (the executor answers them), and otherwise the agent takes its next step.

States: loading, running, awaiting_user_input, paused, stopped, finished, error,
rate_limited. The user steers with ``agent.state`` events of source ``user`` (paused,
running, stopped) and with messages. Limits on iterations and cost stop the agent with a
reason; a higher limit (a new controller with it) lets the user continue.

What to do next is decided by a pure function (``decide`` in app/agent/decisions.py) of what
the controller keeps of the log; the controller is the I/O around it: it reads and appends
through a ``SessionLog``, calls the agent, and waits on its subscription.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from array import array
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from app.agent.codeact import CodeActAgent
from app.agent.decisions import (
    AskModel,
    AwaitActions,
    Continue,
    End,
    Limits,
    Outcome,
    Pause,
    Situation,
    Wait,
    after_model_error,
    condensation,
    decide,
    overdue,
    without_refused,
)
from app.agent.stuck import StuckConfig
from app.events import (
    AWAITED_KINDS,
    REMARK_KINDS,
    AgentState,
    ErrorObservation,
    Event,
    InvalidEventError,
    LlmCall,
)
from app.events.conversation import AgentStateName, LimitName
from app.events.llm import ANSWERED_NOTHING
from app.llm import LlmError
from app.llm.retry import Failure
from app.store import ConcurrencyError, RecordedEvent, SessionLog, SessionStream

log = logging.getLogger(__name__)

#: Stuck detection looks at this many recent events (enough for every default threshold).
STUCK_WINDOW = 80
#: The controller's window of the log: the last STUCK_WINDOW events and those the agent was
#: not given yet, trimmed when this many more have come in (a trim moves the list).
TRIM_EVERY = 256

__all__ = ["STUCK_WINDOW", "TRIM_EVERY", "AgentController", "Limits", "Outcome"]


class AgentController:
    def __init__(
        self,
        store: SessionLog,
        session_id: UUID,
        agent: CodeActAgent,
        *,
        limits: Limits | None = None,
        stuck: StuckConfig | None = None,
        stop_when_paused: bool = False,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.agent = agent
        self.limits = limits or Limits()
        self.stuck = stuck or StuckConfig()
        self.stop_when_paused = stop_when_paused
        #: the log's recent events (a window, not the log: see ``_trim``), in seq order
        self.events: list[RecordedEvent] = []
        self._last_seq = 0  # the last event taken in
        self._given = 0  # the last event the agent was given (it keeps what it needs)
        self._seen_at: dict[int, float] = {}  # awaited actions: when they came in
        self._progressed = False
        # What the decisions need, kept up to date as events come in (no rescans per step).
        self._state: tuple[AgentStateName | None, str] = (None, "")
        self._request: tuple[str | None, int] = (None, 0)
        self._last_user_message: RecordedEvent | None = None
        self._last_call: RecordedEvent | None = None
        self._last_call_led = False  # whether an event names the last call as its cause
        self._awaiting: dict[int, RecordedEvent] = {}
        self._calls = 0
        self._spent = 0.0
        self._finished_since_user = False
        self._answered_calls = array("q")  # seqs of the calls that did not fail: condensing
        self._condensation: RecordedEvent | None = None  # the last one

    # -- the log ---------------------------------------------------------------------------

    async def _catch_up(self) -> None:
        self._remember(await self.store.read(self.session_id, after_seq=self._last_seq))

    def _remember(self, fresh: list[RecordedEvent]) -> None:
        # a person's remark (an annotation) is in the log, but nothing the agent acts on
        self._progressed = self._progressed or any(e.kind not in REMARK_KINDS for e in fresh)
        for event in fresh:
            self._track(event)
        self.events.extend(fresh)
        if fresh:
            self._last_seq = fresh[-1].seq
        self._trim()

    def _trim(self) -> None:
        """Keep a window of the log, not the log: what stuck detection looks at (the last
        STUCK_WINDOW events) and what the agent was not given yet. Everything else the
        decisions need is kept as events come in (``_track``); the agent keeps its own
        conversation. A long session's memory no longer grows with the log here."""
        keep_from = min(self._given + 1, self._last_seq - STUCK_WINDOW + 1)
        drop = keep_from - (self.events[0].seq if self.events else keep_from)
        if drop >= TRIM_EVERY:
            del self.events[:drop]

    def _track(self, event: RecordedEvent) -> None:
        kind = event.kind
        if event.cause is not None:
            if self._last_call is not None and event.cause == self._last_call.seq:
                self._last_call_led = True
            if event.source == "environment" and event.cause in self._awaiting:
                del self._awaiting[event.cause]
                self._seen_at.pop(event.cause, None)
        if kind == "agent.state":
            if event.source == "agent":
                self._state = (event.payload["state"], event.payload.get("reason", ""))
            elif event.source == "user":
                self._request = (event.payload["state"], event.seq)
        elif kind == "message" and event.source == "user":
            self._last_user_message = event
            self._finished_since_user = False
        elif kind == "llm.call":
            self._last_call, self._last_call_led = event, False
            if event.payload.get("error_kind") not in ANSWERED_NOTHING:
                self._calls += 1  # as a replay counts: it serves no call that answered nothing
            self._spent += event.payload.get("cost_usd") or 0.0
            if not event.payload.get("error"):
                self._answered_calls.append(event.seq)
        elif kind in AWAITED_KINDS:  # its answer comes later in the log
            self._awaiting[event.seq] = event
            self._seen_at[event.seq] = time.monotonic()
        elif kind == "finish":
            self._finished_since_user = True
        elif kind == "agent.condensation":
            self._condensation = event

    async def _record(self, recorded: list[RecordedEvent]) -> None:
        """Take in what we just appended; read instead if someone else wrote in between."""
        if recorded and recorded[0].seq == self._last_seq + 1:
            self._remember(recorded)
        else:
            await self._catch_up()

    def _agent_state(self) -> tuple[AgentStateName | None, str]:
        return self._state

    async def _set_state(
        self,
        state: AgentStateName,
        reason: str = "",
        limit: LimitName | None = None,
        stuck: bool = False,
    ) -> None:
        if self._agent_state() != (state, reason):
            changed = AgentState(
                state=state, reason=reason, source="agent", limit=limit, stuck=stuck or None
            )
            await self._record(await self.store.append(self.session_id, [changed]))

    # -- deciding --------------------------------------------------------------------------

    def _unprocessed_call(self) -> RecordedEvent | None:
        """The last model call, if what it leads to was never appended. A call that failed
        for good leads to nothing; an unusable reply (``bad_response``) leads to an error."""
        call = self._last_call
        if call is None or self._last_call_led:
            return None
        if call.payload.get("error") and call.payload.get("error_kind") != "bad_response":
            return None
        return call

    def _pending(self) -> list[RecordedEvent]:
        return list(self._awaiting.values())

    def _since_user(self, limit: int | None = None) -> list[RecordedEvent]:
        """Events after the last user message (at most the last ``limit``)."""
        start = self._index_after(self._last_user_message.seq if self._last_user_message else 0)
        if limit is not None:
            start = max(start, len(self.events) - limit)
        return self.events[start:]

    def _index_after(self, seq: int) -> int:
        """Index in self.events of the first event after ``seq`` (events are seq-ordered)."""
        if not self.events:
            return 0
        offset = self.events[0].seq
        return min(max(seq - offset + 1, 0), len(self.events))

    def _iterations(self) -> int:
        return self._calls

    def _cost(self) -> float:
        return self._spent

    # -- running ---------------------------------------------------------------------------

    async def run(self) -> Outcome:
        """Drive the session until it finishes, needs the user, stops, or fails."""
        await self._catch_up()
        if self._state[0] is None:
            await self._set_state("loading", "reading the session")
        async with self.store.subscribe(self.session_id, after_seq=self._last_seq) as stream:
            while True:
                self._progressed = False
                outcome = await self._advance()
                if outcome is not None:
                    return outcome
                if not self._progressed:  # nothing to do until the log moves on
                    await self._wait(stream)

    def situation(self) -> Situation:
        """What the decisions read, as the controller keeps it (no rescan of the log)."""
        return Situation(
            request=self._request[0],
            unprocessed_call=self._unprocessed_call(),
            pending=bool(self._awaiting),
            asked=self._last_user_message is not None,
            finished_since_user=self._finished_since_user,
            recent=[e for e in self._since_user(limit=STUCK_WINDOW) if e.kind not in REMARK_KINDS],
            iterations=self._iterations(),
            cost=self._cost(),
        )

    async def _advance(self) -> Outcome | None:
        """Do the next thing the log calls for (``decide``); None means 'go on'."""
        decision = decide(
            self.situation(), self.limits, self.stuck, stop_when_paused=self.stop_when_paused
        )
        match decision:
            case End(state=state, reason=reason, outcome=outcome, limit=limit, stuck=stuck):
                await self._set_state(state, reason, limit, stuck)
                return outcome
            case Pause(reason=reason):
                await self._set_state("paused", reason)
            case Continue(call=call):
                await self._decide(call)
            case AwaitActions():
                await self._answer_overdue()
            case Wait():
                pass
            case AskModel():
                return await self._step()
        return None

    async def _step(self) -> Outcome | None:
        """The agent's next step: a model call, recorded with what it leads to."""
        await self._set_state("running")
        try:
            self._given = self._last_seq
            reply = await self.agent.step(self.session_id, self.events, on_retry=self._retrying)
        except LlmError as exc:
            failed = after_model_error(
                exc.kind, exc.message, condensation(self._answered_calls, self._condensation)
            )
            if isinstance(failed, End):
                await self._set_state(failed.state, failed.reason)
                return failed.outcome
            await self.store.append(self.session_id, [failed])
            await self._catch_up()
            return None
        await self._record_step(reply.call, reply.messages)
        return None

    async def _record_step(self, call: LlmCall, messages: Mapping[str, str]) -> None:
        """Append the model call and its actions as one batch: the call takes the next seq,
        and the actions name it as their cause. The prompt messages it names and the store
        may not have yet (``messages``) go in the same transaction.

        A paid call is never lost: if the store refuses the batch (an action it cannot hold),
        the call is recorded with an error the model reads instead of the actions; if it
        refuses the call itself, the call is recorded without its response, saying why.
        """
        payload = call.payload()
        refused: InvalidEventError | None = None  # why the last batch was refused
        while True:
            seq = self._last_seq + 1
            if refused is None:
                batch = [call, *self._consequences(payload, seq)]
            else:
                batch = without_refused(call, seq, refused)
            try:
                recorded = await self.store.append(
                    self.session_id, batch, expected_seq=seq - 1, messages=messages
                )
            except ConcurrencyError:
                await self._catch_up()  # an observation or a user message came in between
                continue
            except InvalidEventError as exc:
                if refused is not None and refused.kind == "llm.call":
                    raise  # even the call without its response: not something a reply caused
                log.warning("the store refused a model step of %s: %s", self.session_id, exc)
                # An action refused: record the call with an error instead. The call refused
                # (or the call with that error): record it without its response.
                refused = exc if refused is None else InvalidEventError(str(exc), kind="llm.call")
                continue
            await self._record(recorded)
            return

    def _consequences(self, payload: dict[str, Any], seq: int) -> list[Event]:
        """What the call at ``seq`` leads to; a fault in turning a reply into actions is an
        error the model reads (and a logged traceback), never a lost call."""
        try:
            return self.agent.consequences(payload, seq)
        except Exception as exc:
            log.exception("turning the reply of %s at seq %d into actions", self.session_id, seq)
            return [
                ErrorObservation(
                    message=f"the reply could not be turned into actions ({type(exc).__name__}: "
                    f"{exc})",
                    error_type="internal",
                    cause=seq,
                )
            ]

    async def _decide(self, call: RecordedEvent) -> None:
        """Append what a recorded call leads to; if the store refuses it, an error instead."""
        try:
            recorded = await self.store.append(
                self.session_id, self._consequences(call.payload, call.seq)
            )
        except InvalidEventError as exc:
            log.warning("the store refused the actions of %s: %s", self.session_id, exc)
            message = f"what the model asked for could not be recorded ({exc})"
            error = ErrorObservation(message=message, error_type="unrecordable", cause=call.seq)
            recorded = await self.store.append(self.session_id, [error])
        await self._record(recorded)

    async def _retrying(self, failure: Failure, wait: float) -> None:
        if failure.kind == "rate_limited":
            await self._set_state(
                "rate_limited", f"the model is rate limited; retrying in {wait:.1f} s"
            )

    async def _answer_overdue(self) -> None:
        """Answer the actions past their timeout with an error; read only if one was.

        Nothing overdue needs no read: whatever else arrives comes through the subscription
        (``_wait``). Reading here anyway cost a query per step, while the action ran.
        """
        late = overdue(self._pending(), self._seen_at, time.monotonic(), self.limits)
        for action, waited in late:
            with contextlib.suppress(Exception):
                await self.store.append(
                    self.session_id,
                    [
                        ErrorObservation(
                            message=f"no result after {waited:.0f} s; the action was "
                            "given up (is the sandbox or tool service running?)",
                            error_type="timeout",
                            cause=action.seq,
                        )
                    ],
                )
        if late:
            await self._catch_up()

    async def _wait(self, stream: SessionStream) -> None:
        """Until an event we do not know yet arrives (or a pending action may be overdue).

        The subscription delivers every event in order, so the next unknown one is usually
        exactly the next seq and needs no read; our own appends come by again and are skipped.
        """
        known = self._last_seq
        try:
            async with asyncio.timeout(self.limits.pending_grace):
                event = await anext(stream)
                while event.seq <= known:
                    event = await anext(stream)
        except TimeoutError:
            await self._catch_up()
            return
        if event.seq == known + 1:
            self._remember([event])
        else:
            await self._catch_up()
