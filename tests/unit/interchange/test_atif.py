"""ATIF in and out as pure code (app/interchange/atif): a Chronicle session as a trajectory
that Harbor's rules accept, a trajectory as events, and both round trips equal; hostile
files refused in one line naming the field, or read sensibly."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.events import (
    AgentState,
    Event,
    FileEdit,
    FileEditOutput,
    LlmCall,
    LlmResponse,
    LlmUsage,
    Message,
    Run,
    RunOutput,
    SessionCreated,
    ToolCall,
)
from app.interchange.atif.export import trajectory
from app.interchange.atif.schema import WRITTEN_VERSION, Trajectory, rule_problems
from app.interchange.atif.steps import Item, same
from app.interchange.atif.to_events import import_atif
from app.interchange.importers import ImportedSession, ImportProblem, read_recording

SESSION = uuid.UUID("0b7e2d1c-5a4f-4e3b-9c8d-7f6e5d4c3b2a")
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def native_items() -> list[Item]:
    """A small session as Chronicle's own agent records it."""
    bash = ToolCall(id="call_1", name="execute_bash", arguments='{"command": "ls -a"}')
    edit = ToolCall(
        id="call_2",
        name="str_replace_editor",
        arguments=json.dumps({"command": "create", "path": "/w/a.py", "file_text": "x = 1\n"}),
    )
    events: list[Event] = [
        SessionCreated(title="make a.py", config={"agent": "codeact", "model": "gpt-test"}),
        Message(content="Create a.py holding x = 1", source="user"),
        LlmCall(
            model="gpt-test",
            fingerprint="f1",
            prompt=["p1", "p2"],
            response=LlmResponse(
                content="Let me look first.",
                tool_calls=[bash, edit],
                finish_reason="tool_calls",
                reasoning_content="ls, then write",
                id="resp-1",
            ),
            usage=LlmUsage(
                prompt_tokens=120, completion_tokens=30, cached_tokens=100, total_tokens=150
            ),
            cost_usd=0.0006000000000000001,
            latency_ms=812.5,
            cause=2,
        ),
        Run(command="ls -a", tool_call_id="call_1", thought="Let me look first.", cause=3),
        FileEdit(
            command="create",
            path="/w/a.py",
            file_text="x = 1\n",
            tool_call_id="call_2",
            cause=3,
        ),
        RunOutput(output=".\n..\n", exit_code=0, cause=4),
        FileEditOutput(path="/w/a.py", diff="+x = 1", cause=5),
        Run(command="cat a.py", source="user", cause=None),
        RunOutput(output="x = 1\n", exit_code=0, cause=8),
        LlmCall(
            model="gpt-test",
            fingerprint="f2",
            response=LlmResponse(content="Done: a.py holds x = 1.", finish_reason="stop"),
            usage=LlmUsage(prompt_tokens=200, completion_tokens=12, total_tokens=212),
            cost_usd=0.0004,
        ),
        Message(content="Done: a.py holds x = 1.", source="agent", cause=10),
        AgentState(state="awaiting_user_input", reason="the agent answered"),
    ]
    return [
        Item(e.kind, e.source, n, e.cause, e.payload(), START + timedelta(seconds=n))
        for n, e in enumerate(events, 1)
    ]


MESSAGES = {"p1": {"role": "system", "content": "You are a careful agent."}}


def as_items(session: ImportedSession) -> list[Item]:
    return [
        Item(e.kind, e.source, n, e.cause, e.payload()) for n, e in enumerate(session.events, 1)
    ]


def exported(session: ImportedSession) -> dict[str, Any]:
    return trajectory(session.session_id, as_items(session))


def imported(document: Any, name: str = "t.json") -> ImportedSession:
    [session] = import_atif(name, json.dumps(document).encode())
    return session


def harbor_rules_hold(document: dict[str, Any]) -> None:
    parsed = Trajectory.model_validate(document)
    assert list(rule_problems(parsed)) == []


def test_a_session_is_a_trajectory_by_harbor_rules() -> None:
    document = trajectory(SESSION, native_items(), MESSAGES)
    harbor_rules_hold(document)
    assert document["schema_version"] == WRITTEN_VERSION == "ATIF-v1.7"
    assert document["session_id"] == str(SESSION)
    assert document["agent"]["name"] == "codeact"
    assert document["agent"]["model_name"] == "gpt-test"
    sources = [step["source"] for step in document["steps"]]
    assert sources == ["system", "user", "agent", "agent", "agent"]
    system, user, first, by_user, last = document["steps"]
    assert system["message"] == "You are a careful agent."
    assert user == {
        "step_id": 2,
        "timestamp": "2026-03-01T12:00:02Z",
        "source": "user",
        "message": "Create a.py holding x = 1",
    }
    assert [call["function_name"] for call in first["tool_calls"]] == [
        "execute_bash",
        "str_replace_editor",
    ]
    assert first["tool_calls"][0]["arguments"] == {"command": "ls -a"}
    assert first["reasoning_content"] == "ls, then write"
    assert first["observation"]["results"] == [
        {
            "source_call_id": "call_1",
            "content": ".\n..\n",
            "extra": {"chronicle": {"kind": "run.output", "exit_code": 0}},
        },
        {
            "source_call_id": "call_2",
            "content": "+x = 1",
            "extra": {"chronicle": {"kind": "file.edit.output", "path": "/w/a.py", "diff": True}},
        },
    ]
    assert first["metrics"] == {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "cached_tokens": 100,
        "cost_usd": 0.0006000000000000001,
    }
    assert first["llm_call_count"] == 1
    assert first["extra"]["chronicle"]["latency_ms"] == 812.5
    assert by_user["llm_call_count"] == 0
    assert by_user["tool_calls"][0]["function_name"] == "run"
    assert by_user["extra"] == {"chronicle": {"source": "user"}}
    assert "metrics" not in by_user
    assert last["message"] == "Done: a.py holds x = 1." and "tool_calls" not in last
    assert document["final_metrics"] == {
        "total_prompt_tokens": 320,
        "total_completion_tokens": 42,
        "total_cached_tokens": 100,
        "total_cost_usd": 0.0006000000000000001 + 0.0004,
        "total_steps": 5,
    }
    assert document["extra"]["chronicle"]["state"] == "awaiting_user_input"


def test_session_to_atif_to_session_to_atif_is_the_same_trajectory() -> None:
    first = trajectory(SESSION, native_items(), MESSAGES)
    session = imported(first)
    kinds = [event.kind for event in session.events]
    assert kinds == [
        "session.created",
        "message",
        "message",
        "llm.call",
        "run",
        "file.edit",
        "run.output",
        "file.edit.output",
        "run",
        "run.output",
        "llm.call",
        "message",
        "agent.state",
    ]
    call = session.events[3]
    assert isinstance(call, LlmCall)
    assert call.response.reasoning_content == "ls, then write"
    assert call.response.id == "resp-1" and call.latency_ms == 812.5
    assert call.usage.cached_tokens == 100 and call.cost_usd == 0.0006000000000000001
    user_run = session.events[8]
    assert user_run.source == "user" and user_run.cause is None
    assert isinstance(session.events[9], RunOutput) and session.events[9].exit_code == 0
    assert session.events[-1].state == "awaiting_user_input"  # type: ignore[attr-defined]
    assert same(exported(session), first)


def written_by_another_agent() -> dict[str, Any]:
    """A trajectory using what Chronicle holds no field for (written here for the test)."""
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": "run-42",
        "agent": {
            "name": "other-agent",
            "version": "3.1",
            "model_name": "vendor/model-x",
            "tool_definitions": [{"type": "function", "function": {"name": "Bash"}}],
            "extra": {"temperature": 0.2},
        },
        "notes": "written by hand",
        "steps": [
            {"step_id": 1, "source": "system", "message": "be brief"},
            {
                "step_id": 2,
                "timestamp": "2026-03-01T10:00:00+00:00",
                "source": "user",
                "message": [
                    {"type": "text", "text": "what is in "},
                    {"type": "image", "source": {"media_type": "image/png", "path": "a.png"}},
                    {"type": "text", "text": "this picture?"},
                ],
            },
            {
                "step_id": 3,
                "source": "agent",
                "reasoning_effort": "high",
                "message": "",
                "tool_calls": [
                    {"tool_call_id": "t1", "function_name": "Bash", "arguments": {"command": "ls"}},
                    {"tool_call_id": "t2", "function_name": "browse", "arguments": {"url": "x"}},
                    {"tool_call_id": "t3", "function_name": "finish", "arguments": {}},
                ],
                "observation": {
                    "results": [
                        {"content": "a.png\n"},
                        {"content": [{"type": "text", "text": "<html>"}], "extra": {"ms": 3}},
                    ]
                },
                "metrics": {
                    "prompt_tokens": 10,
                    "completion_tokens": 2,
                    "logprobs": [-0.5, -0.25],
                    "completion_token_ids": [7, 8],
                    "extra": {"cache_creation_input_tokens": 4, "service_tier": "x"},
                },
                "is_copied_context": False,
                "extra": {"stop_reason": "tool_use"},
            },
            {
                "step_id": 4,
                "source": "agent",
                "message": "parse error",
                "observation": {"results": [{"content": "bad JSON, try again"}, {"content": "2"}]},
            },
        ],
        "final_metrics": {"total_prompt_tokens": 10, "total_steps": 4, "extra": {"k": 1}},
        "extra": {"producer": {"nested": [1, 2.5, None, True]}},
        "subagent_trajectories": [
            {
                "trajectory_id": "sub-1",
                "agent": {"name": "helper", "version": "1"},
                "steps": [{"step_id": 1, "source": "user", "message": "hi"}],
            }
        ],
    }


def test_another_agents_trajectory_imports_and_exports_as_it_was() -> None:
    document = written_by_another_agent()
    session = imported(document)
    kinds = [(event.kind, event.cause) for event in session.events]
    assert kinds == [
        ("session.created", None),
        ("message", None),
        ("message", None),
        ("llm.call", None),
        ("run", 4),
        ("imported", 4),
        ("finish", 4),
        ("run.output", 5),  # the first result, without source_call_id: the first call's
        ("imported.output", 6),
        ("llm.call", None),
        ("imported.output", 10),  # the feedback no tool call takes (the next is kept)
        ("message", 10),
        ("agent.state", None),
    ]
    user = session.events[2]
    assert isinstance(user, Message) and user.content == "what is in this picture?"
    call = session.events[3]
    assert isinstance(call, LlmCall) and call.model == "vendor/model-x"
    assert call.usage.cache_creation_tokens == 4 and call.cost_usd is None
    assert session.events[-1].state == "finished"  # type: ignore[attr-defined]
    assert all(event.imported and event.imported.format == "atif" for event in session.events)
    assert session.events[4].imported.id == "t1"  # type: ignore[union-attr]
    assert exported(session) == document  # member for member, ints, floats and all


@pytest.mark.parametrize("version", ["ATIF-v1.0", "ATIF-v1.5", "ATIF-v1.8", "ATIF-v1.9", None])
def test_any_version_1_is_read(version: str | None) -> None:
    document: dict[str, Any] = {
        "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": 1, "source": "user", "message": "hi"}],
    }
    if version is not None:
        document["schema_version"] = version
    assert exported(imported(document)) == document


def test_the_same_file_is_the_same_session_and_events() -> None:
    data = json.dumps(written_by_another_agent()).encode()
    [one] = read_recording("atif", "a.json", data)
    [two] = read_recording("atif", "b.json", data)
    assert one.session_id == two.session_id
    assert [e.event_id for e in one.events] == [e.event_id for e in two.events]


def minimal(**step: Any) -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.7",
        "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": 1, "source": "agent", "message": "", **step}],
    }


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ([], "t.json: is not an ATIF trajectory: expected a JSON object"),
        ({"steps": []}, "field 'agent': is not ATIF: Field required"),
        (
            {**minimal(), "schema_version": "ATIF-v2.0"},
            "field 'schema_version': is not ATIF: Value error, 'ATIF-v2.0' is no ATIF version",
        ),
        ({**minimal(), "steps": []}, "field 'steps': is not ATIF: List should have at least 1"),
        (minimal(step_id="one"), "field 'steps[0].step_id': is not ATIF: Input should be a valid"),
        (minimal(colour="red"), "field 'steps[0].colour': is not ATIF: Extra inputs"),
        (minimal(source="robot"), "field 'steps[0].source': is not ATIF: Input should be"),
        (
            minimal(tool_calls=[{"tool_call_id": "a", "function_name": "f", "arguments": "{}"}]),
            "field 'steps[0].tool_calls[0].arguments': is not ATIF: Input should be a valid dict",
        ),
        (
            minimal(tool_calls=[{"tool_call_id": "a", "function_name": "f"}]),
            "field 'steps[0].tool_calls[0].arguments': is not ATIF: Field required",
        ),
        (
            minimal(observation={"results": [{"source_call_id": "zz", "content": "x"}]}),
            "field 'steps[0].observation.results[0].source_call_id': is not ATIF: 'zz' is no",
        ),
        (
            minimal(message=[{"type": "image", "text": "x"}]),
            "field 'steps[0].message[0].text': is not ATIF: a text part has text",
        ),
        (
            {**minimal(), "steps": [minimal()["steps"][0], minimal()["steps"][0]]},
            "field 'steps[1].step_id': is not ATIF: is 1, expected 2",
        ),
        (
            {
                **minimal(),
                "steps": [{"step_id": 1, "source": "user", "message": "", "metrics": {}}],
            },
            "field 'steps[0].metrics': is not ATIF: only an agent's step may have it",
        ),
        (
            minimal(llm_call_count=0, reasoning_content="hmm"),
            "field 'steps[0].llm_call_count': is not ATIF: is 0 (no model call)",
        ),
    ],
)
def test_what_is_not_atif_is_refused_naming_the_field(document: Any, said: str) -> None:
    with pytest.raises(ImportProblem) as refused:
        import_atif("t.json", json.dumps(document).encode())
    assert said in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"\xff\xfe", "is not UTF-8 text"),
        (b"{", "is not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_what_is_not_json_is_refused(data: bytes, said: str) -> None:
    with pytest.raises(ImportProblem, match=said):
        import_atif("t.json", data)


def test_lone_surrogates_nuls_and_odd_keys_survive_the_round_trip() -> None:
    odd = "caf\udce9 \x00 end"
    document = minimal(
        message=odd,
        tool_calls=[
            {"tool_call_id": "c\udce9", "function_name": odd, "arguments": {odd: [odd, 1e300]}}
        ],
        observation={"results": [{"source_call_id": "c\udce9", "content": odd}]},
        extra={odd: {odd: None}},
    )
    session = imported(document)
    for event in session.events:
        json.dumps(event.payload())  # the payload is JSON, the odd text as its escapes
    assert exported(session) == document


def test_a_huge_output_and_many_steps_import() -> None:
    big = "y" * 5_000_000
    steps = [{"step_id": 1, "source": "user", "message": "go"}]
    for n in range(2, 2002):
        steps.append(
            {
                "step_id": n,
                "source": "agent",
                "message": "",
                "tool_calls": [{"tool_call_id": f"c{n}", "function_name": "bash",
                                "arguments": {"command": "yes | head"}}],
                "observation": {"results": [{"source_call_id": f"c{n}",
                                             "content": big if n == 2 else "y"}]},
            }
        )  # fmt: skip
    document = {"agent": {"name": "a", "version": "1"}, "steps": steps}
    session = imported(document)
    assert len(session.events) == 1 + 1 + 2000 * 3 + 1
    assert exported(session) == document


def test_results_are_matched_by_id_else_by_position_and_extra_results_are_kept() -> None:
    document = minimal(
        tool_calls=[
            {"tool_call_id": "a", "function_name": "bash", "arguments": {"command": "1"}},
            {"tool_call_id": "b", "function_name": "bash", "arguments": {"command": "2"}},
        ],
        observation={
            "results": [
                {"source_call_id": "b", "content": "two"},
                {"content": "one?"},  # position 1 is b's, answered: the call's own output
                {"content": "three"},  # kept with the step, no event
            ]
        },
    )
    session = imported(document)
    answers = {e.cause: e for e in session.events if e.kind in ("run.output", "imported.output")}
    assert answers[4].payload()["output"] == "two"  # b is seq 4
    assert answers[2].payload()["content"] == "one?"  # the model call, seq 2
    assert 3 not in answers
    assert exported(session) == document
