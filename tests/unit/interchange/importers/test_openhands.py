"""The OpenHands importer on small files in OpenHands' own serialization (pure: no database)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.events import Event
from app.interchange.importers import ImportProblem, read_recording
from app.interchange.importers.model import ImportedSession
from tests.support.foreign_recordings import (
    HUGE_OUTPUT,
    ODD_OUTPUT,
    OPENHANDS_EVALUATION_OUTPUT,
    OPENHANDS_RESOLVER_OUTPUT,
    as_bytes,
    as_json_lines,
    openhands_chat,
    openhands_events,
    openhands_output_line,
    real_recording,
)


def one(data: bytes, file: str = "trajectory.json") -> ImportedSession:
    [session] = read_recording("openhands", file, data)
    return session


def kinds(session: ImportedSession) -> list[str]:
    return [event.kind for event in session.events]


def payload(event: Event) -> dict[str, Any]:
    return event.payload()


def test_a_trajectory_becomes_messages_model_calls_actions_and_observations() -> None:
    session = one(as_bytes(openhands_events()))
    assert kinds(session) == [
        "session.created",
        "message",  # the task (the "loading" state before it is left out)
        "agent.state",  # running
        "llm.call",
        "run",
        "run.output",
        "llm.call",  # one response, two tool calls
        "file.edit",
        "file.edit.output",
        "run",
        "run.output",
        "llm.call",
        "imported",  # the browser
        "imported.output",
        "imported",  # the condensation: no model call
        "llm.call",
        "imported",  # the unknown "teleport"
        "error",
        "llm.call",
        "finish",
        "agent.state",  # finished, as recorded: nothing inferred after it
    ]
    events = session.events
    assert events[-1].payload()["state"] == "finished"
    created = payload(events[0])
    assert created["config"]["agent"] == "openhands"
    assert created["config"]["model"] == "gpt-4o-2024-08-06"
    assert created["config"]["imported"]["agent_class"] == "CodeActAgent"
    assert created["config"]["imported"]["system_prompt"].startswith("You are OpenHands")
    assert session.title == "openhands: Fix add() in calc.py"


def test_actions_are_what_chronicles_agent_makes_of_the_recorded_tool_calls() -> None:
    events = one(as_bytes(openhands_events())).events
    run = payload(events[4])
    assert run["command"] == "cat calc.py"
    assert run["is_input"] is False  # the string "false", coerced as the agent coerces it
    assert run["timeout"] == 120  # the event's hard timeout
    assert run["thought"] == "Let me look at calc.py."  # the response's text, as the agent
    assert run["tool_call_id"] == "call_1"
    assert events[4].cause == 4  # the llm.call's seq
    call = payload(events[3])
    assert call["response"]["tool_calls"] == [
        {
            "id": "call_1",
            "name": "execute_bash",
            "arguments": json.dumps(
                {"command": "cat calc.py", "is_input": "false", "timeout": 120.0}
            ),
        }
    ]
    edit, second_run = payload(events[7]), payload(events[9])
    assert (edit["command"], edit["old_str"], edit["new_str"]) == ("str_replace", "a - b", "a + b")
    assert "security_risk" not in edit  # not one of the tool's parameters
    assert second_run["timeout"] == 30  # "30", from the model's own arguments
    assert events[7].cause == events[9].cause == 7
    assert [c["id"] for c in payload(events[6])["response"]["tool_calls"]] == ["call_2", "call_3"]


def test_what_no_chronicle_tool_expresses_is_kept_as_imported() -> None:
    events = one(as_bytes(openhands_events())).events
    browser = payload(events[12])
    assert browser["tool"] == "browser"
    assert browser["arguments"]["browser_actions"] == "goto('x')"
    assert events[12].cause == 12
    page = payload(events[13])
    assert (page["observation"], page["content"]) == ("browse", "<html>docs</html>")
    assert page["extras"]["url"] == "http://docs.invalid/" and events[13].cause == 13
    condensation = payload(events[14])
    assert condensation["tool"] == "condensation" and events[14].cause is None
    assert condensation["arguments"]["summary"].startswith("Fixed the sign")
    teleport = payload(events[16])
    assert (teleport["tool"], teleport["arguments"]) == ("teleport", {"to": "mars"})
    assert payload(events[15])["response"]["tool_calls"][0]["name"] == "teleport"


def test_odd_outputs_are_kept_verbatim() -> None:
    events = one(as_bytes(openhands_events())).events
    assert payload(events[5])["output"] == ODD_OUTPUT  # NUL and a lone surrogate
    assert payload(events[5])["exit_code"] == 0
    assert payload(events[10])["output"] == HUGE_OUTPUT
    assert payload(events[10])["exit_code"] is None  # -1: no exit code yet
    error = payload(events[17])
    assert (error["message"], error["error_type"]) == ("Agent got stuck in a loop", "AGENT_STUCK")
    assert events[17].cause is None


def test_cost_is_the_growth_of_the_accumulated_cost_and_usage_is_the_responses() -> None:
    calls = [payload(e) for e in one(as_bytes(openhands_events())).events if e.kind == "llm.call"]
    assert [call["cost_usd"] for call in calls] == [0.01, 0.015, 0.005, None, 0.01]
    assert calls[0]["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "cached_tokens": 40,
        "total_tokens": 120,
    }
    assert calls[0]["prompt"] == []  # OpenHands does not record the messages sent
    assert calls[0]["tools"] is not None  # the system action's tool list


def test_latency_is_what_openhands_measured_for_that_response_else_unknown() -> None:
    calls = [payload(e) for e in one(as_bytes(openhands_events())).events if e.kind == "llm.call"]
    # resp-1 and resp-2 are in response_latencies (seconds); the other three responses are not,
    # and an unknown latency is None, never 0 (a 0 would pull every latency percentile down)
    assert [call["latency_ms"] for call in calls] == [1500.0, 2250.0, None, None, None]


def test_an_evaluation_outputs_latencies_reach_each_call() -> None:
    """OpenHands' evaluation outputs keep ``response_latencies`` in the output's ``metrics``
    (each event's ``llm_metrics`` lists none): every call gets its response's."""
    session = one(real_recording(OPENHANDS_EVALUATION_OUTPUT), OPENHANDS_EVALUATION_OUTPUT)
    calls = [payload(e) for e in session.events if e.kind == "llm.call"]
    assert [round(call["latency_ms"]) for call in calls] == [3057, 2198, 4374]
    assert calls[0]["usage"]["prompt_tokens"] == 5920


def test_the_resolvers_flat_output_imports_its_commands_task_answers_and_cost() -> None:
    """OpenHands' own resolver test output (before 0.20): each event flat
    (``dataclasses.asdict``), with no source, id or cause, and one cost per call."""
    session = one(real_recording(OPENHANDS_RESOLVER_OUTPUT), OPENHANDS_RESOLVER_OUTPUT)
    events = session.events
    assert kinds(session) == [
        "session.created", "message",
        "llm.call", "run", "run.output",
        "llm.call", "imported", "imported.output",  # run_ipython: no Chronicle tool
        "llm.call", "run", "run.output",
        "llm.call", "finish", "agent.state",
    ]  # fmt: skip
    task = events[1]
    assert task.source == "user"
    assert payload(task)["content"].startswith("Please fix the following issue")
    assert [payload(e)["command"] for e in events if e.kind == "run"] == [
        "touch LICENSE",
        "cat LICENSE",
    ]
    answers = [e for e in events if e.kind in ("run.output", "imported.output")]
    assert [e.cause for e in answers] == [4, 7, 10]  # the seqs of the actions before them
    assert [payload(e)["exit_code"] for e in events if e.kind == "run.output"] == [0, 0]
    assert payload(events[6])["arguments"]["code"].startswith('mit_license = """MIT License')
    calls = [payload(e) for e in events if e.kind == "llm.call"]
    costs = [0.015396, 0.019719, 0.016743, 0.018855]  # metrics.costs, one per call
    assert [call["cost_usd"] for call in calls] == pytest.approx(costs)
    assert payload(events[12])["message"].startswith("The MIT License has been successfully")
    assert payload(events[-1])["state"] == "finished"
    assert session.title.startswith("openhands: neubig/pr-viewer#5: Please fix the following")


def test_flat_messages_are_the_users_when_they_open_or_answer_and_costs_must_match() -> None:
    history = [
        {"content": "Fix it", "action": "message"},
        {"content": "Which file?", "wait_for_response": True, "action": "message"},
        {"content": "calc.py", "action": "message"},
        {"command": "ls", "thought": "", "action": "run"},
        {"content": "calc.py", "command": "ls", "exit_code": 0, "observation": "run"},
        {"content": "Done", "action": "message"},
    ]
    line = {"issue": {}, "history": history, "metrics": {"costs": [0.5, 0.25]}}
    session = one(as_bytes(line))
    messages = [(e.source, payload(e)["content"]) for e in session.events if e.kind == "message"]
    assert messages == [
        ("user", "Fix it"), ("agent", "Which file?"), ("user", "calc.py"), ("agent", "Done")
    ]  # fmt: skip
    # three calls (two messages, a command) and two costs: which is which is unknown
    calls = [payload(e) for e in session.events if e.kind == "llm.call"]
    assert len(calls) == 3 and {call["cost_usd"] for call in calls} == {None}


def test_every_event_says_where_it_came_from() -> None:
    session = one(as_bytes(openhands_events()), file="run-7.json")
    origins = [payload(event)["imported"] for event in session.events]
    assert origins[0] == {"format": "openhands", "file": "run-7.json", "field": "file"}
    assert origins[4] == {
        "format": "openhands",
        "file": "run-7.json",
        "index": 4,
        "id": "4",
        "field": "action",
    }
    assert origins[5]["field"] == "observation" and origins[5]["id"] == "5"
    assert origins[3]["field"] == "model_response"
    assert origins[16] == {
        "format": "openhands",
        "file": "run-7.json",
        "index": 13,
        "field": "action",
    }
    assert payload(session.events[0])["config"]["imported"]["sha256"]


def test_a_chat_without_states_gets_the_states_chronicles_agent_would_record() -> None:
    session = one(as_bytes(openhands_chat()))
    assert kinds(session) == [
        "session.created", "message", "llm.call", "message", "agent.state", "message",
        "llm.call", "finish", "agent.state",
    ]  # fmt: skip
    states = [payload(e) for e in session.events if e.kind == "agent.state"]
    assert [s["state"] for s in states] == ["awaiting_user_input", "finished"]
    assert payload(session.events[3])["content"] == "1 + 1 = 2."
    assert session.events[3].source == "agent" and session.events[3].cause == 3
    assert payload(session.events[2])["response"]["content"] == "1 + 1 = 2."


def test_importing_the_same_bytes_names_the_same_session_and_events() -> None:
    data = as_bytes(openhands_events())
    first, again = one(data), one(data, file="renamed.json")
    assert first.session_id == again.session_id
    assert [e.event_id for e in first.events] == [e.event_id for e in again.events]
    other = one(as_bytes(openhands_events()[:-1]))
    assert other.session_id != first.session_id
    assert other.events[-1].payload()["state"] == "finished"  # inferred: the agent finished


def test_an_evaluation_output_holds_one_session_per_line() -> None:
    lines = [
        openhands_output_line("calc-1", openhands_events()),
        openhands_output_line("chat-2", openhands_chat()),
    ]
    first, second = read_recording("openhands", "output.jsonl", as_json_lines(lines))
    assert first.title == "openhands: calc-1: Fix add() in calc.py"
    assert second.title.startswith("openhands: chat-2")
    assert payload(first.events[0])["config"]["imported"]["line"] == 1
    assert payload(second.events[1])["imported"]["line"] == 2
    assert payload(first.events[0])["config"]["imported"]["metrics"] == {"accumulated_cost": 0.04}
    # a line is a session of its own: the same line in another file is the same session
    [alone] = read_recording("openhands", "x.jsonl", as_json_lines(lines[1:]))
    assert alone.session_id == second.session_id


def test_old_outputs_hold_action_observation_pairs() -> None:
    events = openhands_events()
    pairs: list[Any] = [
        [events[2], {"observation": "null"}],
        [events[4], events[5]],
        [events[15], {"observation": "null", "content": ""}],
    ]
    output = openhands_output_line("pairs", pairs)
    session = one(as_bytes(output), file="old.json")
    assert kinds(session) == [
        "session.created", "message", "llm.call", "run", "run.output", "llm.call", "finish",
        "agent.state",
    ]  # fmt: skip


def test_old_edit_arguments_are_read_from_their_translated_code() -> None:
    """OpenHands before 0.20 wrote an editor call as ``translated_ipython_code``."""
    item = {
        "id": 3,
        "source": "agent",
        "action": "edit",
        "args": {
            "path": "/workspace/a.py",
            "content": "",
            "start": "1",
            "end": "-1",
            "thought": "Create it.",
            "impl_source": "oh_aci",
            "translated_ipython_code": "print(file_editor(**{'command': 'create', 'path': "
            "'/workspace/a.py', 'file_text': 'x = 1\\n'}))",
        },
    }
    session = one(as_bytes([openhands_chat()[0], item]))
    edit = payload(session.events[3])
    assert (edit["command"], edit["file_text"]) == ("create", "x = 1\n")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "trajectory.json: is not JSON (Expecting property name"),
        (b"\xff\xfe", "trajectory.json: is not UTF-8 text"),
        (
            b'"a string"',
            "trajectory.json: is not an OpenHands recording: expected a list of events",
        ),
        (b"[1]", "trajectory.json, item 0: is not an event object but a number"),
        (
            b'[{"id": 1, "source": "user"}]',
            "trajectory.json, item 0: is neither an action nor an observation",
        ),
        (
            b'[{"action": "run", "args": "ls"}]',
            "trajectory.json, item 0, field 'args': must be an object, not a string",
        ),
        (
            b'[{"action": "message", "args": {}}, {"action": "run", "source": "robot"}]',
            "trajectory.json, item 1, field 'source': must be one of user, agent, environment",
        ),
        (b'[{"action": 7}]', "trajectory.json, item 0, field 'action': must name the action"),
        (
            b'[{"observation": "run", "extras": []}]',
            "trajectory.json, item 0, field 'extras': must be an object, not a list",
        ),
        (
            b'{"history": [{"action": "message"}]}\n{"history": 3}\n',
            "trajectory.json, line 2, field 'history': must be a list of events",
        ),
        (
            b'{"history": []}\n[1, 2]\n',
            "trajectory.json, line 2: is not an OpenHands evaluation output",
        ),
    ],
)
def test_a_bad_file_gets_one_error_naming_the_problem(data: bytes, message: str) -> None:
    with pytest.raises(ImportProblem) as raised:
        read_recording("openhands", "trajectory.json", data)
    assert str(raised.value).startswith(message), str(raised.value)
