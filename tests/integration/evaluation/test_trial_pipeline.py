"""The one trial pipeline both ``chronicle eval run`` and the API's workers score a trial by:
every scorer, pure or I/O, judged once and written in one guarded append (real PostgreSQL)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from pathlib import Path

import pytest

from app.config import Settings
from app.evaluation.scorers import BUILTIN, TRIAL_SCORERS, scorer_named
from app.evaluation.scoring import (
    PureScorer,
    Score,
    ScoredSession,
    ScoringContext,
    evaluation_config,
)
from app.evaluation.suite import Task
from app.evaluation.trials import record_trial, score_trial, trial_config
from app.events import AgentState, Finish, Message, SessionCreated
from app.store import ConcurrencyError, EventStore
from tests.support.toy_scorers import ReadmeWritten

TASK = Task(id="six-sevens", prompt="What is six times seven?", answer="42")


class Says42(PureScorer):
    name = "says_42"
    version = 1

    def score(self, session: ScoredSession) -> Score | None:
        return Score.verdict("42" in (session.finish_message or ""), "looked for 42")


async def ended_trial(store: EventStore, workspace: Path, state: str = "finished") -> uuid.UUID:
    session = uuid.uuid4()
    config = evaluation_config("pipeline", TASK, 1) | {"workspace": str(workspace)}
    await store.append(
        session,
        [
            SessionCreated(title=TASK.prompt, config=config),
            Message(content=TASK.prompt, source="user"),
            Finish(message="42", cause=2),
            AgentState(state=state, reason="done"),
        ],
        expected_seq=0,
    )
    return session


async def scores_of(store: EventStore, session: uuid.UUID) -> list[tuple[int, str, int]]:
    """Each eval.score as (seq, name, the seq it judged)."""
    return [
        (event.seq, event.payload["name"], event.payload["scored_seq"])
        for event in await store.read(session)
        if event.kind == "eval.score"
    ]


async def test_a_pure_scorer_scores_a_trial_once_in_one_append(
    store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    session = await ended_trial(store, tmp_path)
    scorers = [Says42(), BUILTIN["finished"]]
    first = await score_trial(store, settings, session, scorers, runtime=None)
    assert first.outcome == "scored" and first.recorded
    assert first.scores["says_42"] == Score.verdict(True, "looked for 42")
    assert await scores_of(store, session) == [(5, "says_42", 4), (6, "finished", 4)]
    again = await score_trial(store, settings, session, scorers, runtime=None)
    assert (again.outcome, again.recorded) == ("scored already", False)
    assert again.scores["says_42"].label == "pass"
    assert len(await scores_of(store, session)) == 2


async def test_two_pipelines_at_once_score_a_trial_once(
    store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    session = await ended_trial(store, tmp_path)
    scorers = [Says42(), BUILTIN["steps"]]
    done = await asyncio.gather(
        *(score_trial(store, settings, session, scorers, runtime=None) for _ in "ab")
    )
    assert sorted(result.recorded for result in done) == [False, True]
    assert Counter(name for _, name, _ in await scores_of(store, session)) == {
        "says_42": 1,
        "steps": 1,
    }


async def test_a_trial_that_has_not_ended_is_left_unscored(
    store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    session = await ended_trial(store, tmp_path, state="paused")
    result = await score_trial(store, settings, session, [Says42()], runtime=None)
    assert result.outcome == "not ended" and await scores_of(store, session) == []


async def test_a_toy_io_scorer_registered_judges_the_trials_own_workspace(
    store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    """One module (tests/support/toy_scorers.py) and one registration: the pipeline gives it
    the trial's workspace, and its verdict is written with the others; ``check`` is in the
    trial's scorers too and does not apply (the task has no check)."""
    (tmp_path / "README.md").write_text("written by the agent")
    session = await ended_trial(store, tmp_path)
    registry = {**BUILTIN, ReadmeWritten.name: ReadmeWritten()}
    scorers = [scorer_named(name, registry) for name in (*TRIAL_SCORERS, "readme_written")]
    result = await score_trial(store, settings, session, scorers, runtime=None)
    assert result.recorded and result.scores["readme_written"].label == "pass"
    names = [name for _, name, _ in await scores_of(store, session)]
    assert names == ["finished", "answer", "cost", "steps", "readme_written"]


class Hangs:
    """An I/O scorer that never finishes (a check whose process dies under it)."""

    name = "hangs"
    version = 1
    pure = False

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def judge(self, context: ScoringContext) -> Score | None:
        self.started.set()
        await asyncio.Event().wait()
        return None


async def test_a_scoring_that_dies_in_an_io_scorer_records_nothing_and_is_taken_over(
    store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    """All of a trial's scores or none: the pure scores judged before an I/O scorer that never
    ends are not written on their own (``chronicle eval run`` appended its check apart from
    the other scores, so a run that died during the check kept a trial scored without it),
    and the claim dies with the scoring, so the next one scores the trial."""
    session = await ended_trial(store, tmp_path)
    hangs = Hangs()
    dying = asyncio.create_task(
        score_trial(store, settings, session, [Says42(), hangs], runtime=None)
    )
    await hangs.started.wait()
    dying.cancel()
    await asyncio.gather(dying, return_exceptions=True)
    assert await scores_of(store, session) == []
    taken_over = await score_trial(store, settings, session, [Says42()], runtime=None)
    assert taken_over.recorded and await scores_of(store, session) == [(5, "says_42", 4)]


async def record(
    store: EventStore, settings: Settings, task: Task, workspace: Path, session: uuid.UUID
) -> str | None:
    """``record_trial`` of ``task`` in ``workspace``, as a trial of run "pipeline"."""
    config = trial_config(
        settings, task, workspace, runtime="local", model="openai/m", base_url=None,
        evaluation=evaluation_config("pipeline", task, 1),
    )  # fmt: skip
    return await record_trial(store, settings, session, task=task, workspace=workspace,
                              source_dir=workspace.parent, config=config, user="ana")  # fmt: skip


async def test_a_trial_is_recorded_once_with_its_workspace_as_it_starts(
    store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    """The record step both ``chronicle eval run`` and the API take (``record_trial``): the
    task's files in a fresh workspace, the trial's config and prompt, the workspace's start."""
    task = Task(id="notes", prompt="Read the notes.", files={"notes.txt": "hello\n"})
    workspace = tmp_path / "ws"
    session = uuid.uuid4()
    assert await record(store, settings, task, workspace, session) is None
    assert (workspace / "notes.txt").read_text() == "hello\n"
    events = await store.read(session)
    assert [e.kind for e in events[:2]] == ["session.created", "message"]
    assert events[0].payload["user"] == "ana" and events[1].payload["content"] == task.prompt
    recorded = ScoredSession(events).config
    assert recorded.workspace == str(workspace) and recorded.runtime == "local"
    assert recorded.evaluation is not None and recorded.evaluation.run == "pipeline"
    assert "workspace.snapshot" in {e.kind for e in events}  # the workspace as it started
    with pytest.raises(ConcurrencyError):  # recorded once
        await record(store, settings, task, tmp_path / "again", session)


async def test_a_workspace_that_cannot_be_prepared_is_the_trials_recorded_error(
    store: EventStore, settings: Settings, tmp_path: Path
) -> None:
    task = Task(id="gone", prompt="Fix it.", repo="no-such-repo", commit="0" * 40)
    session = uuid.uuid4()
    problem = await record(store, settings, task, tmp_path / "ws", session)
    assert problem is not None and "no-such-repo" in problem
    [*_, last] = await store.read(session)
    assert last.kind == "agent.state" and last.payload["state"] == "error"
    assert last.payload["reason"] == f"the task's workspace could not be prepared: {problem}"
    scored = await score_trial(store, settings, session, [BUILTIN["finished"]], runtime=None)
    assert scored.outcome == "scored"  # an ended trial, scored at once
