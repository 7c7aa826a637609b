"""What a replay has served and found so far, shared by its gateway and its action workers.

The replay session is read incrementally (``sync``); each model call the controller recorded
names the recorded call it was served from (``replayed_from``), which is how an action is
matched with the recorded one, and how what each call led to is compared.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from app.errors import ChronicleError
from app.replay.canonical import compare_consequences
from app.replay.divergence import (
    ActionDivergence,
    Divergence,
    RedactedDivergence,
    RequestDivergence,
    redacted,
)
from app.replay.recording import Recording
from app.replay.seqs import SeqMap
from app.store import RecordedEvent, SessionLog

ReplayMode = Literal["strict", "positional"]


class ReplayDiverged(ChronicleError):
    """Raised where the replay must stop; ``divergence`` says how it differed."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.summary)
        self.divergence = divergence


class ReplayProgress:
    def __init__(
        self, store: SessionLog, replay_id: UUID, recording: Recording, mode: ReplayMode
    ) -> None:
        self.store = store
        self.replay_id = replay_id
        self.recording = recording
        self.mode = mode
        #: model calls served from the recording
        self.served = 0
        #: served calls whose request and consequences both matched
        self.matched = 0
        #: the difference that stopped the replay
        self.divergence: Divergence | None = None
        #: request differences a positional replay reported and went on after
        self.differences: list[RequestDivergence] = []
        self._differing: set[int] = set()  # recorded seqs of calls with a reported difference
        # Only what is still to be compared is kept of the replay's own log: the controller
        # holds it whole already, and a copy here would grow with the session.
        self._last_seq = 0
        self._last_state: tuple[str | None, str] = (None, "")
        #: replay call seq -> what it led to, until its consequences are checked
        self._caused: dict[int, list[RecordedEvent]] = {}
        # replay call seq -> recorded call seq: both in order, a step's 16 bytes
        self._calls = SeqMap()
        self._unchecked: list[int] = []  # replay call seqs whose consequences await a check

    def stop(self, divergence: Divergence) -> ReplayDiverged:
        """Remember the first divergence that stops the replay; the exception to raise."""
        if self.divergence is None:
            self.divergence = divergence
        return ReplayDiverged(divergence)

    def unseen(self, step: int, consequence_seqs: list[int]) -> RedactedDivergence | None:
        """A redacted part among what recorded model call ``step`` led to: what the replayed
        agent made of the reply cannot be compared with it (None: all there)."""
        found = self.recording.redacted.among(consequence_seqs)
        if found is None:
            return None
        return redacted(
            step, found[0], found[1], f"model call {step}: what it led to cannot be compared"
        )

    def report(self, difference: RequestDivergence) -> None:
        self.differences.append(difference)
        self._differing.add(difference.recorded_seq)

    async def sync(self) -> None:
        """Read what the replay session recorded since the last look."""
        for event in await self.store.read(self.replay_id, after_seq=self._last_seq):
            self._last_seq = event.seq
            if event.cause in self._caused:
                self._caused[event.cause].append(event)
            origin = event.payload.get("replayed_from")
            if event.kind == "llm.call" and isinstance(origin, int):
                self._calls.set(event.seq, origin)
                self._caused[event.seq] = []
                self._unchecked.append(event.seq)
            elif event.kind == "agent.state" and event.source == "agent":
                self._last_state = (
                    event.payload.get("state"),
                    str(event.payload.get("reason", "")),
                )

    def last_state(self) -> tuple[str | None, str]:
        """The replayed agent's last state and its reason (as of the last ``sync``)."""
        return self._last_state

    def recorded_call(self, replay_call_seq: int) -> int | None:
        """The recorded call a call of the replay session was served from."""
        return self._calls.get(replay_call_seq)

    def caused_by(self, replay_call_seq: int) -> list[RecordedEvent]:
        """What a served call of the replay led to (until its consequences are checked)."""
        return self._caused.get(replay_call_seq, [])

    async def check_consequences(self) -> None:
        """Compare what each served call led to with the recording (every call recorded since
        the last check); raise ``ReplayDiverged`` at the first difference."""
        while self._unchecked:
            replay_seq = self._unchecked.pop(0)
            recorded_seq = self._calls.get(replay_seq)
            assert recorded_seq is not None  # sync put it there
            step = self.recording.step_of(recorded_seq)
            recorded = [
                (e.seq, e.kind, e.payload) for e in await self.recording.consequences(recorded_seq)
            ]
            new = [(e.kind, e.payload) for e in self._caused.pop(replay_seq, [])]
            unseen = self.unseen(step, [seq for seq, _, _ in recorded])
            if unseen is not None:
                raise self.stop(unseen)
            divergence: ActionDivergence | None = compare_consequences(
                step, recorded_seq, recorded, new
            )
            if divergence is not None:
                raise self.stop(divergence)
            if recorded_seq not in self._differing:
                self.matched += 1
