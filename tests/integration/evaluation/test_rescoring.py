"""Re-scoring sessions in a real PostgreSQL: scores are appended as ``eval.score`` events (as
of the last event read), a run name finds its sessions through ``session_state``, scoring
again keeps the old scores, and a session that cannot be scored does not stop the others."""

from __future__ import annotations

import uuid

import pytest

from app.evaluation.rescoring import rescore, sessions_to_score, suite_tasks
from app.evaluation.scorers import BUILTIN, DEFAULT_SCORERS
from app.evaluation.scoring import Score, ScoringError, evaluation_config, latest_scores
from app.evaluation.suite import Task, parse_suite
from app.events import AgentState, EvalScore, Event, Finish, LlmCall, Message, SessionCreated
from app.projections import SessionState, bring_up_to_date
from app.sessions.sql.session_rows import list_sessions
from app.store import EventStore

SCORERS = [BUILTIN[name] for name in DEFAULT_SCORERS]


async def write(store: EventStore, *events: Event) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(session, events, expected_seq=0)
    return session


def created(run: str | None, task_id: str = "t", answer: str | None = "42") -> SessionCreated:
    task = Task(id=task_id, prompt="What is 6 x 7?", answer=answer)
    return SessionCreated(config=evaluation_config(run, task, 1) if run else {})


def finished(message: str, cost: float = 0.5) -> tuple[Event, ...]:
    return (
        Message(content="What is 6 x 7?"),
        LlmCall(model="m", fingerprint="f", cost_usd=cost),
        Finish(message=message, cause=3),
        AgentState(state="finished"),
    )


def stopped() -> tuple[Event, ...]:
    return (
        Message(content="What is 6 x 7?"),
        LlmCall(model="m", fingerprint="f", cost_usd=0.25),
        AgentState(state="stopped", reason="reached the iteration limit (1)"),
    )


async def test_scores_are_recorded_on_each_session_of_a_run(store: EventStore) -> None:
    right = await write(store, created("nightly", "a"), *finished("42"))
    wrong = await write(store, created("nightly", "b"), *finished("41", cost=0.25))
    limit = await write(store, created("nightly", "c"), *stopped())
    other = await write(store, created("weekly", "a"), *finished("42"))

    ids = await sessions_to_score(store, ["nightly"])
    assert ids == [right, wrong, limit]
    results = await rescore(store, ids, SCORERS)

    assert [(r.session_id, r.task_id, r.evaluation_run, r.scored_seq) for r in results] == [
        (right, "a", "nightly", 5),
        (wrong, "b", "nightly", 5),
        (limit, "c", "nightly", 4),
    ]
    labels = [{name: s.label or s.value for name, s in r.scores.items()} for r in results]
    assert labels == [
        {"finished": "pass", "answer": "pass", "cost": 0.5, "steps": 1.0},
        {"finished": "pass", "answer": "fail", "cost": 0.25, "steps": 1.0},
        {"finished": "fail", "answer": "fail", "cost": 0.25, "steps": 0.0},
    ]
    events = await store.read(right)
    scores = [e for e in events if e.kind == "eval.score"]
    assert [(e.seq, e.source, e.payload["name"]) for e in scores] == [
        (6, "system", "finished"),
        (7, "system", "answer"),
        (8, "system", "cost"),
        (9, "system", "steps"),
    ]
    assert scores[1].payload == {
        "name": "answer",
        "scorer_version": 1,
        "score_value": 1.0,
        "score_label": "pass",
        "explanation": "the finish message '42' equals '42'",
        "scored_seq": 5,
        "evaluation_run": "nightly",
    }
    for session, verdicts in (
        (wrong, {"finished": "pass", "answer": "fail"}),
        (limit, {"finished": "fail", "answer": "fail"}),
    ):
        latest = latest_scores(await store.read(session))
        assert {name: latest[(name, 1)].payload["score_label"] for name in verdicts} == verdicts
    assert not [e for e in await store.read(other) if e.kind == "eval.score"]


async def test_scoring_again_keeps_the_old_scores_and_the_newest_counts(store: EventStore) -> None:
    session = await write(store, created(None), *finished("the answer is 42"))
    first = await rescore(store, [session], [BUILTIN["answer"]], suite_tasks(None, "42"))
    assert first[0].scores["answer"].label == "fail"  # exact: the message is more than 42
    second = await rescore(store, [session], [BUILTIN["answer"]], suite_tasks(None, "regex:42"))
    assert second[0].scores["answer"].label == "pass"
    assert second[0].scored_seq == 6  # the first score is an event too

    events = await store.read(session)
    answers = [e for e in events if e.kind == "eval.score"]
    assert [e.payload["score_label"] for e in answers] == ["fail", "pass"]
    assert latest_scores(events)[("answer", 1)] == answers[-1]
    assert isinstance(answers[-1].event(), EvalScore)

    # The session list sees the appended events; its status is still the agent's.
    await bring_up_to_date(store, SessionState())
    [row] = await list_sessions(store, limit=5)
    assert (row.status, row.last_seq, row.steps) == ("finished", 7, 1)


async def test_a_suite_edited_since_the_run_judges_by_the_recorded_task_id(
    store: EventStore,
) -> None:
    session = await write(store, created("nightly", "six-times-seven", "41"), *finished("42"))
    suite = parse_suite("name: s\ntasks:\n  - {id: six-times-seven, prompt: x, answer: '42'}\n")
    [result] = await rescore(store, [session], [BUILTIN["answer"]], suite_tasks(suite, None))
    assert result.scores == {"answer": Score.verdict(True, "the finish message '42' equals '42'")}
    [result] = await rescore(store, [session], [BUILTIN["answer"]])
    assert result.scores["answer"].label == "fail"  # the task as recorded expects 41


async def test_a_session_that_cannot_be_scored_does_not_stop_the_others(
    store: EventStore,
) -> None:
    good = await write(store, created(None), *finished("42"))
    missing = uuid.uuid4()
    results = await rescore(store, [missing, good], [BUILTIN["finished"]])
    assert results[0].error == f"session {missing} has no events: nothing to score"
    assert results[1].error is None and results[1].scores["finished"].label == "pass"


async def test_a_target_is_a_session_id_or_a_run_name(store: EventStore) -> None:
    one = await write(store, created("nightly"), *finished("42"))
    two = await write(store, created("nightly"), *finished("42"))
    assert await sessions_to_score(store, [str(two), "nightly"]) == [two, one]
    with pytest.raises(ScoringError, match="no evaluation run is named 'nope'"):
        await sessions_to_score(store, ["nope"])


def replay_of(recorded: uuid.UUID, replay_run: str | None, matched: bool = True) -> list[Event]:
    """A replay session of ``recorded`` (its config copied, evaluation_run included), tagged
    with a ``replay`` score of ``replay_run`` as ``chronicle eval replay --name`` tags it."""
    events: list[Event] = [
        SessionCreated(config=evaluation_config("nightly", Task(id="t", prompt="p"), 1),
                       replay_of=recorded),
        *finished("42"),
    ]  # fmt: skip
    if replay_run is not None:
        label = "pass" if matched else "fail"
        events.append(
            EvalScore(name="replay", scorer_version=1, score_value=float(matched),
                      score_label=label, explanation="e", scored_seq=5,
                      evaluation_run=replay_run)
        )  # fmt: skip
    return events


async def test_a_replay_runs_name_scores_its_replay_sessions(store: EventStore) -> None:
    recorded = await write(store, created("nightly"), *finished("42"))
    first = await write(store, *replay_of(recorded, "nightly-v2"))
    second = await write(store, *replay_of(recorded, "nightly-v2", matched=False))
    untagged = await write(store, *replay_of(recorded, None))  # a plain `chronicle replay`
    await write(store, *replay_of(recorded, "nightly-v3"))
    assert untagged not in await sessions_to_score(store, ["nightly-v2"])
    assert await sessions_to_score(store, ["nightly-v2"]) == [first, second]
    # the recorded run is still its own sessions only: replays copy its config, not its name
    assert await sessions_to_score(store, ["nightly"]) == [recorded]

    results = await rescore(store, [first, second], SCORERS)
    assert [r.scores["finished"].label for r in results] == ["pass", "pass"]
