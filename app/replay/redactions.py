"""What was redacted from a recording, as far as a replay needs to know: which parts of which
events went (docs/erasure.md), and which model calls' whole prompts name a prompt message that
went with them.

A redacted part reads as an empty value of its type (``[redacted]`` for a string), which a
replay must not serve as if it were recorded: the agent would be fed, or compared with, what
the recording never held. The ``redaction`` records say which parts went and why; they come
after what they redacted, so the index of a recording (``recording.py``) learns them as it
reads the log, and the replay asks here before it serves or compares an event.

A prompt entry redacted from one call is missing from every later call that keeps it
(``prompt_kept``: ``app.events.prompts``), and only the first call has a record of it. So the
redacted entries of each call's whole prompt are followed here too, by their place in it, from
the calls' stored payloads (a redacted entry is a marker there).

Some parts block nothing: who sent an event (the envelope's ``user``, which erasing a person
takes) and a session's title are neither served to the agent nor compared.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from app.events.commitment import RedactionPathError, is_redacted, part_at
from app.replay.divergence import RedactedDivergence, RedactedPart, redacted
from app.store import RecordedEvent

#: Paths whose redaction a replay can go past (see the module).
UNREAD = frozenset({"/user", "/title"})


class _Gap(NamedTuple):
    """A redacted entry of the current whole prompt: its place in it (None: unknown, the
    whole prompt list or payload went), and where it was redacted."""

    place: int | None
    seq: int
    path: str


class RedactedParts:
    """Folded over a recording's events in order (``add``); then asked by seq."""

    def __init__(self) -> None:
        #: target seq -> the parts its redaction records name
        self._records: dict[int, list[RedactedPart]] = {}
        #: call seq -> redacted entries its whole prompt keeps from earlier calls
        self._kept_gaps: dict[int, list[_Gap]] = {}
        self._gaps: list[_Gap] = []  # the last call's whole prompt's

    def __bool__(self) -> bool:
        return bool(self._records or self._kept_gaps)

    def add(self, event: RecordedEvent) -> None:
        if event.kind == "redaction":
            target = event.payload.get("target_seq")
            if isinstance(target, int) and target > 0:
                reason = event.payload.get("reason")
                self._records.setdefault(target, []).append(
                    RedactedPart(
                        seq=target,
                        path=str(event.payload.get("path", "")),
                        reason=reason if isinstance(reason, str) and reason else None,
                    )
                )
        elif event.kind == "llm.call":
            self._call(event)

    def _call(self, event: RecordedEvent) -> None:
        stored = event.stored_payload
        kept = event.payload.get("prompt_kept")
        inherited = (
            [gap for gap in self._gaps if gap.place is None or gap.place < kept]
            if isinstance(kept, int) and kept > 0
            else []
        )
        offset = kept if isinstance(kept, int) else 0
        own: list[_Gap] = []
        prompt = _part(stored, "/prompt")
        if is_redacted(stored):
            own.append(_Gap(None, event.seq, ""))
        elif is_redacted(prompt):
            own.append(_Gap(None, event.seq, "/prompt"))
        elif isinstance(prompt, list):
            own += [
                _Gap(offset + index, event.seq, f"/prompt/{index}")
                for index, entry in enumerate(prompt)
                if is_redacted(entry)
            ]
        if inherited:
            self._kept_gaps[event.seq] = inherited
        self._gaps = inherited + own

    def of(self, seq: int) -> list[RedactedPart]:
        """The parts of the event at ``seq`` that were redacted and that a replay would
        serve or compare (empty: none; ``UNREAD`` parts are left out)."""
        return [part for part in self._records.get(seq, ()) if part.path not in UNREAD]

    def at(self, seq: int, path: str) -> bool:
        """Whether the part at ``path`` of the event at ``seq`` went (it, or all of it)."""
        return any(part.path in ("", path) for part in self._records.get(seq, ()))

    def of_call(self, seq: int) -> list[RedactedPart]:
        """What the recorded call at ``seq`` misses: its own redacted parts, then the prompt
        messages it keeps from earlier calls that were redacted there."""
        kept = [
            next(
                (p for p in self._records.get(gap.seq, ()) if p.path in (gap.path, "", "/prompt")),
                RedactedPart(seq=gap.seq, path=gap.path),
            )
            for gap in self._kept_gaps.get(seq, ())
        ]
        return self.of(seq) + [part for index, part in enumerate(kept) if part not in kept[:index]]

    def unservable(self, step: int, seq: int) -> RedactedDivergence | None:
        """The ``redacted`` divergence of a replay at model call ``step`` when the recorded
        call at ``seq`` cannot be served (``of_call``: its answer or its request is not all
        there), else None: where Chronicle's replay stops (``gateway.py``), and the gateway's
        replay of an outside agent (``app/external/replay_serving.py``)."""
        missing = self.of_call(seq)
        if not missing:
            return None
        return redacted(step, seq, missing, f"model call {step} cannot be served")

    def among(self, seqs: Any) -> tuple[int, list[RedactedPart]] | None:
        """The first of ``seqs`` with a redacted part, and its parts (None: none has)."""
        for seq in seqs:
            parts = self.of(seq)
            if parts:
                return seq, parts
        return None


def _part(stored: Any, pointer: str) -> Any:
    try:
        return part_at(stored, pointer)
    except RedactionPathError:
        return None
