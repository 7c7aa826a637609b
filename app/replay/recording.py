"""A recorded session read for replay: its model calls in order, what each led to, the answer
to each action, and where the user came in.

A live session may run in several goes (``run``, then ``resume`` after the agent asked the
user, stopped or was interrupted). The user's events (messages, pause/resume/stop) split the
recording into segments: the replay feeds each segment's user events, runs the controller as
a resumed session would, and expects it to stop as the recording did before the next user
event. Model calls that were interrupted (the run was cancelled while the model thought) or
lost (its worker died then) answered nothing and are left out: the resumed run asked again.

The recording is read twice, a page at a time, so a replay's memory does not grow with the
length of the session it replays: once up front for its index (seqs only: which event is a
call, what each call led to, which observation answers which action, and the segments), and
again as the replay advances (``RecordedWindow``), keeping the events from the recorded call
before the one being served onwards. Reporting a request difference reads the calls it needs
again (``prompt_of``).
"""

from __future__ import annotations

import bisect
from array import array
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.errors import ChronicleError
from app.events import OBSERVATION_KINDS
from app.events.commitment import markers_in
from app.events.llm import ANSWERED_NOTHING
from app.events.prompts import whole_prompt
from app.events.session_config import SessionConfig
from app.replay.divergence import RedactedPart, describe_parts
from app.replay.redactions import UNREAD, RedactedParts
from app.replay.seqs import SeqGroups, SeqMap, Seqs
from app.store import EventStore, RecordedEvent

#: The states in which a controller returns (``app.agent.controller.Outcome``).
OUTCOME_STATES = frozenset({"finished", "awaiting_user_input", "stopped", "error", "paused"})
#: The user's events, fed to the replay where they were recorded.
USER_KINDS = frozenset({"message", "agent.state"})
#: Events read from the store at a time.
PAGE_EVENTS = 256

#: The events of the recorded session with ``seq > after``, at most ``limit`` of them.
Pages = Callable[[int, int], Awaitable[list[RecordedEvent]]]


class RecordingError(ChronicleError):
    """The session cannot be replayed; the message says why."""


class RecordingRedacted(RecordingError):
    """The session cannot be replayed because a part it needs from the start was redacted."""


class Segment(BaseModel):
    """The user's events that start one go of the controller, and how that go ended: the
    agent's last state before the next user event (None: the recording says nothing), after
    ``calls`` model calls in all."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    feed: list[RecordedEvent]
    end_state: str | None
    end_reason: str = ""
    #: seq of the agent.state that says how it ended (None: none does)
    end_seq: int | None = None
    calls: int


class RecordedWindow:
    """The recorded events a replay still needs, read ahead a page at a time: from the
    ``forget_before`` mark on (the session's seqs run 1, 2, ... without a gap)."""

    def __init__(self, pages: Pages, page_events: int = PAGE_EVENTS) -> None:
        self.pages = pages
        self.page_events = page_events
        self._events: deque[RecordedEvent] = deque()
        self._first = 1  # seq of self._events[0]
        self._read = 0  # seq of the last event read

    async def get(self, seq: int) -> RecordedEvent:
        if seq < self._first:
            raise LookupError(f"recorded event {seq} was forgotten (kept from {self._first})")
        while seq > self._read:
            page = await self.pages(self._read, self.page_events)
            if not page:
                raise LookupError(f"the recording has no event {seq}")
            self._read = page[-1].seq
            self._events.extend(event for event in page if event.seq >= self._first)
        return self._events[seq - self._first]

    def forget_before(self, seq: int) -> None:
        """Events before ``seq`` will not be asked for again."""
        while self._events and self._first < seq:
            self._events.popleft()
            self._first += 1
        self._first = max(self._first, seq)

    def __len__(self) -> int:
        return len(self._events)


class Recording(BaseModel):
    """The index of a recorded session (seqs) and the window its events are read through."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    session_id: Any
    title: str
    config: SessionConfig
    #: seqs of the calls the replay serves, in order
    call_seqs: Seqs
    #: the first of them (its model and tools configure the replay)
    first_call: RecordedEvent | None = None
    #: what each served call led to (actions, the agent's message, errors)
    consequence_seqs: SeqGroups = Field(default_factory=lambda: SeqGroups())
    #: action seq -> seq of its observation
    answer_seqs: SeqMap = Field(default_factory=lambda: SeqMap())
    #: seqs of ``runtime.restarted`` events: the model reads them, so the replay serves them
    restart_seqs: Seqs = Field(default_factory=lambda: array("q"))
    segments: list[Segment]
    #: seqs of every llm.call of the log, the interrupted ones too (a prompt may keep
    #: messages of one), and of those that list their whole prompt
    all_call_seqs: Seqs = Field(default_factory=lambda: array("q"))
    whole_prompt_seqs: Seqs = Field(default_factory=lambda: array("q"))
    #: what was redacted from it (``redactions.py``)
    redacted: RedactedParts = Field(default_factory=RedactedParts)
    window: RecordedWindow

    @property
    def outcome(self) -> str | None:
        return self.segments[-1].end_state if self.segments else None

    def step_of(self, call_seq: int) -> int:
        """The 1-based number of the recorded call at ``call_seq``."""
        index = bisect.bisect_left(self.call_seqs, call_seq)
        if index == len(self.call_seqs) or self.call_seqs[index] != call_seq:
            raise KeyError(call_seq)
        return index + 1

    async def call(self, index: int) -> RecordedEvent:
        """The recorded call the replay serves ``index``-th (0-based)."""
        return await self.window.get(self.call_seqs[index])

    async def consequences(self, call_seq: int) -> list[RecordedEvent]:
        return [await self.window.get(seq) for seq in self.consequence_seqs.of(call_seq)]

    async def answer(self, action_seq: int) -> RecordedEvent | None:
        seq = self.answer_seqs.get(action_seq)
        return None if seq is None else await self.window.get(seq)

    async def restarts_between(self, after: int, before: int) -> list[RecordedEvent]:
        low = bisect.bisect_right(self.restart_seqs, after)
        high = bisect.bisect_left(self.restart_seqs, before)
        return [await self.window.get(seq) for seq in self.restart_seqs[low:high]]

    def serving(self, index: int) -> None:
        """The replay serves call ``index`` now: what came before the call it served last
        is not needed any more."""
        if index > 0:
            self.window.forget_before(self.call_seqs[index - 1])

    async def prompt_of(self, call_seq: int) -> list[str]:
        """The hashes of the whole prompt of the recorded call at ``call_seq`` (resolved from
        the last call before it that lists its whole prompt: ``app.events.prompts``), read again
        from the store: a difference is reported once."""
        starts = self.whole_prompt_seqs
        before = bisect.bisect_right(starts, call_seq)
        start = starts[before - 1] if before else self.all_call_seqs[0]
        prompt: list[str] | None = None
        after = start - 1
        while after < call_seq:
            page = await self.window.pages(after, self.window.page_events)
            if not page:
                break
            for event in page:
                if event.seq > call_seq:
                    break
                if event.kind == "llm.call":
                    prompt = whole_prompt(event.payload, prompt)
            after = page[-1].seq
        return prompt or []


def _answers_nothing(call: RecordedEvent) -> bool:
    """A call stopped before the model answered (``interrupted``), or one a dead worker had
    in flight (``lost``, recorded by the worker that took over): nothing to serve."""
    return call.payload.get("error_kind") in ANSWERED_NOTHING


class _Index:
    """What ``Recording`` holds, folded over the recorded events a page at a time."""

    def __init__(self) -> None:
        self.created: RecordedEvent | None = None
        #: the paths of its session.created that were redacted (and that the agent reads)
        self.config_redacted: list[str] = []
        self.config = SessionConfig()
        self.call_seqs = array("q")
        self.first_call: RecordedEvent | None = None
        self.consequences = SeqGroups()
        self.answers = SeqMap()
        self.restarts = array("q")
        self.all_calls = array("q")
        self.whole_prompts = array("q")
        self.segments: list[Segment] = []
        self._feed: list[RecordedEvent] = []
        self._state: tuple[str | None, str] = (None, "")
        self._state_seq: int | None = None
        self.redacted = RedactedParts()
        self._agent_since_feed = False
        self._user_spoke = False

    def add(self, events: list[RecordedEvent]) -> None:
        for event in events:
            if self.created is None:
                self._start(event)
            self._event(event)

    def _start(self, event: RecordedEvent) -> None:
        if event.kind != "session.created":
            raise RecordingError(
                "this session has no session.created event, so nothing says how its agent "
                "was configured; only sessions started by `chronicle run` can be replayed"
            )
        self.created = event
        self.config_redacted = [
            path for path, _ in markers_in(event.stored_payload) if path not in UNREAD
        ]
        if self.config_redacted:  # refused with the records' reasons once they are read
            return
        try:
            config = SessionConfig.of_payload(event.payload)
        except ValidationError as exc:
            raise RecordingError(f"its recorded config is not valid: {exc}") from None
        if config.platform_log is True:
            raise RecordingError(
                "this is the platform's audit log, not a session: read it with "
                "`chronicle audit log`; there is no agent in it to replay"
            )
        if event.payload.get("replay_of"):
            raise RecordingError(
                "this session is itself a replay; replay the session it replays "
                f"({event.payload['replay_of']}) instead"
            )
        self.config = config

    def _event(self, event: RecordedEvent) -> None:
        kind = event.kind
        self.redacted.add(event)
        if kind == "llm.call":
            self.all_calls.append(event.seq)
            if event.payload.get("prompt_kept") is None:
                self.whole_prompts.append(event.seq)
            if not _answers_nothing(event):
                self.call_seqs.append(event.seq)
                if self.first_call is None:
                    self.first_call = event
        elif kind == "runtime.restarted":
            self.restarts.append(event.seq)
        cause = event.cause
        if cause is not None and self._served_call(cause):
            self.consequences.add(cause, event.seq)
        elif cause is not None and kind in OBSERVATION_KINDS:
            self.answers.set(cause, event.seq)
        self._segment(event)

    def _segment(self, event: RecordedEvent) -> None:
        if event.source == "user" and event.kind == "message":
            self._user_spoke = True
        elif event.kind == "llm.call" and not self._user_spoke and self._served_call(event.seq):
            # The controller waits for the user's first message before it asks the model:
            # a replay would wait for ever. An imported recording can start so.
            raise RecordingError(
                f"its first model call (seq {event.seq}) comes before any message from the "
                "user, and the agent only starts on the user's message (an imported "
                "recording whose task was not recorded as the user's says so)"
            )
        if event.source == "user" and event.kind in USER_KINDS:
            if self._agent_since_feed:
                if self._state[0] not in OUTCOME_STATES:
                    raise RecordingError(
                        f"the user's {event.kind} at seq {event.seq} came while the agent "
                        "was working; replaying a session steered mid-run is not supported yet"
                    )
                self.segments.append(
                    Segment.model_construct(
                        feed=self._feed,
                        end_state=self._state[0],
                        end_reason=self._state[1],
                        end_seq=self._state_seq,
                        calls=len(self.call_seqs),
                    )
                )
                self._feed, self._agent_since_feed = [], False
            self._feed.append(event)
        elif event.kind == "agent.state" and event.source == "agent":
            self._state = (event.payload.get("state"), str(event.payload.get("reason", "")))
            self._state_seq = event.seq
            self._agent_since_feed = True
        elif event.kind == "llm.call" and self._served_call(event.seq):
            self._agent_since_feed = True

    def _served_call(self, seq: int) -> bool:
        """Whether ``seq`` is a call the replay serves (one of ``call_seqs``, in order: the
        last one, usually)."""
        calls = self.call_seqs
        if calls and calls[-1] == seq:
            return True
        index = bisect.bisect_left(calls, seq)
        return index < len(calls) and calls[index] == seq

    def recording(self, window: RecordedWindow) -> Recording:
        created = self.created
        if created is None:
            raise RecordingError("the session has no events")
        if not self._user_spoke:
            raise RecordingError(
                "it holds no message from the user, and the agent only starts on the user's "
                "message: there is nothing to replay"
            )
        if self.config_redacted:
            parts = self.redacted.of(created.seq) or [
                RedactedPart(seq=created.seq, path=path) for path in self.config_redacted
            ]
            raise RecordingRedacted(
                f"how its agent was configured was redacted ({describe_parts(parts)}): the "
                "replay cannot set the agent up as recorded"
            )
        ended = self._state[0] if self._state[0] in OUTCOME_STATES else None
        segments = [
            *self.segments,
            Segment.model_construct(
                feed=self._feed,
                end_state=ended,
                end_reason=self._state[1],
                end_seq=self._state_seq,
                calls=len(self.call_seqs),
            ),
        ]
        # Built, not validated: what goes in is what this class made.
        return Recording.model_construct(
            session_id=created.session_id,
            title=str(created.payload.get("title", "")),
            config=self.config,
            call_seqs=self.call_seqs,
            first_call=self.first_call,
            consequence_seqs=self.consequences.finish(),
            answer_seqs=self.answers.finish(),
            restart_seqs=self.restarts,
            segments=segments,
            all_call_seqs=self.all_calls,
            whole_prompt_seqs=self.whole_prompts,
            redacted=self.redacted,
            window=window,
        )


async def stream_recording(pages: Pages, page_events: int = PAGE_EVENTS) -> Recording:
    """The recording of the session ``pages`` reads (see the module): its index read now, a
    page at a time, its events as the replay asks for them. ``RecordingError`` when it was not
    started by a session run, or when a user event came while the agent worked."""
    index = _Index()
    after = 0
    while page := await pages(after, page_events):
        index.add(page)
        after = page[-1].seq
    if index.created is None:
        raise RecordingError(
            "this session has no session.created event, so nothing says how its agent was "
            "configured; only sessions started by `chronicle run` can be replayed"
        )
    return index.recording(RecordedWindow(pages, page_events))


def store_pages(store: EventStore, session_id: UUID) -> Pages:
    """``Pages`` of one session of ``store``."""

    async def read(after: int, limit: int) -> list[RecordedEvent]:
        return await store.read(session_id, after_seq=after, limit=limit)

    return read


def list_pages(events: list[RecordedEvent]) -> Pages:
    """``Pages`` of a session's events held in a list (seq order, from seq 1)."""

    async def read(after: int, limit: int) -> list[RecordedEvent]:
        return [event for event in events if event.seq > after][:limit]

    return read
