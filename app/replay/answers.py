"""The replay's answers to actions: recorded observations answer actions equal to the recorded
ones, and nothing runs.

A ``RecordedAnswers`` handler (an ``ActionHandler``, as the sandbox's and the MCP tools' are
for a live session's action workers) answers a service's actions; the replay's log
(``log.py``) calls it as each action is appended. An action is matched with the recorded
action at the same place among what the same recorded model call led to, and compared in
canonical form (``canonical.py``). Equal: the recorded observation is appended again, marked
``replayed_from`` (after the sandbox restarts recorded while the action ran, which the model
reads too). Different (or no recorded answer): there is nothing to answer it with, so the
replay stops with an ``action`` divergence — in either mode — and the run ends in ``error``,
saying why.
"""

from __future__ import annotations

from app.events import Action, Observation, Service, new_event_id
from app.replay.canonical import canonical_action, compare_consequences
from app.replay.divergence import ActionDivergence, Divergence, RedactedDivergence, redacted
from app.replay.progress import ReplayProgress
from app.store import RecordedEvent, ServiceFailed


class RecordedAnswers:
    """An ``ActionHandler`` answering ``service``'s actions from the recording."""

    def __init__(self, service: Service, progress: ReplayProgress) -> None:
        self.service: Service = service
        self.name = f"replay-{service}"
        self.title = f"replay of the {'sandbox' if service == 'sandbox' else 'MCP tools'}"
        self.progress = progress

    async def handle(self, action: Action) -> Observation:
        """The recorded observation that answers ``action``, as an event of its own."""
        return rebuilt_observation(await self.recorded_answer(action))

    async def recorded_answer(self, action: Action) -> RecordedEvent:
        """The recorded observation that answers ``action`` (its restarts appended before
        it); ``ServiceFailed`` when there is none, the replay stopped with the divergence."""
        progress = self.progress
        await progress.sync()
        call_seq = action.cause
        recorded_call = progress.recorded_call(call_seq) if call_seq is not None else None
        if call_seq is None or recorded_call is None:
            raise ServiceFailed(
                f"the replay cannot answer this {action.kind}: it does not come from a model "
                "call served from the recording"
            )
        step = progress.recording.step_of(recorded_call)
        siblings = progress.caused_by(call_seq)
        index = next(i for i, e in enumerate(siblings) if e.event_id == action.event_id)
        recorded = await progress.recording.consequences(recorded_call)
        new = [(e.kind, e.payload) for e in siblings[: index + 1]]
        old = [(e.seq, e.kind, e.payload) for e in recorded[: index + 1]]
        divergence: Divergence | None = progress.unseen(step, [seq for seq, _, _ in old])
        divergence = divergence or compare_consequences(step, recorded_call, old, new)
        if divergence is None:
            answer = await progress.recording.answer(recorded[index].seq)
            if answer is not None:
                divergence = await self._unservable(step, action, recorded[index].seq, answer)
            if answer is not None and divergence is None:
                await self._restarts(recorded[index].seq, answer.seq)
                return answer
        if divergence is None:
            same = canonical_action(action.kind, action.payload())
            divergence = ActionDivergence(
                step=step,
                recorded_seq=recorded[index].seq,
                index=index,
                recorded=same,
                new=same,
                summary=f"model call {step}: the recording holds no answer to this "
                f"{action.kind} (its run ended before one came)",
            )
        progress.stop(divergence)
        raise ServiceFailed(f"the replay diverged: {divergence.summary}")

    async def _unservable(
        self, step: int, action: Action, action_seq: int, answer: RecordedEvent
    ) -> RedactedDivergence | None:
        """The recorded answer, or a sandbox restart served before it, had a part redacted:
        the agent would read a placeholder (None: all there)."""
        restarts = await self.progress.recording.restarts_between(action_seq, answer.seq)
        found = self.progress.recording.redacted.among([*(r.seq for r in restarts), answer.seq])
        if found is None:
            return None
        return redacted(
            step, found[0], found[1], f"model call {step}: the answer to its {action.kind} "
            "cannot be served",
        )  # fmt: skip

    async def _restarts(self, action_seq: int, answer_seq: int) -> None:
        """The sandbox restarts recorded while this action ran, appended before its answer
        as the executor appended them (the model reads them in the conversation)."""
        restarts = [
            restart.event().model_copy(
                update={"event_id": new_event_id(), "replayed_from": restart.seq}
            )
            for restart in await self.progress.recording.restarts_between(action_seq, answer_seq)
        ]
        if restarts:
            await self.progress.store.append(self.progress.replay_id, restarts)


def rebuilt_observation(answer: RecordedEvent) -> Observation:
    """The recorded observation ``answer`` as an event of the replay, marked ``replayed_from``
    (validated and dumped again: what ``app/replay/served.py`` skips where it can)."""
    observation = answer.event()
    assert isinstance(observation, Observation)
    return observation.model_copy(update={"event_id": new_event_id(), "replayed_from": answer.seq})
