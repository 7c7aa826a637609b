"""The SWE-agent importer on small ``.traj`` files in SWE-agent's own format (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.events import Event, canonical_json
from app.interchange.importers import ImportProblem, read_recording
from app.interchange.importers.model import ImportedSession
from app.llm.fingerprint import content_hash, fingerprint, stable_hash
from tests.support.foreign_recordings import (
    CTF_FLAG,
    EDIT_ACTION,
    HEREDOC_ACTION,
    ODD_OUTPUT,
    SWE_AGENT_CTF,
    as_bytes,
    real_recording,
    swe_agent_trajectory,
)


def one(document: Any, file: str = "django__django-11099.traj") -> ImportedSession:
    [session] = read_recording("swe-agent", file, as_bytes(document))
    return session


def payload(event: Event) -> dict[str, Any]:
    return event.payload()


def test_a_trajectory_becomes_a_session_of_model_calls_actions_and_observations() -> None:
    session = one(swe_agent_trajectory())
    assert [e.kind for e in session.events] == [
        "session.created",
        "message",  # the task: the history's first user message
        "llm.call", "run", "run.output",
        "llm.call", "file.edit", "file.edit.output",
        "llm.call", "file.edit", "file.edit.output",
        "llm.call", "message",  # an empty action: the model's reply is the agent's message
        "llm.call", "run", "run.output",
        "llm.call", "imported", "imported.output",  # exit_forfeit
        "llm.call", "finish", "imported.output",  # submit, and the patch it printed
        "agent.state",
    ]  # fmt: skip
    assert session.title == "swe-agent: django__django-11099"
    assert payload(session.events[1])["content"].endswith("Fix add() in calc.py")
    assert payload(session.events[-1]) | {"imported": None} == {
        "state": "finished",
        "reason": "submitted",
        "imported": None,
    }
    config = payload(session.events[0])["config"]
    assert config["model"] == "claude-sonnet-4-20250514"  # from replay_config
    assert config["imported"]["model_stats"]["instance_cost"] == 0.42
    assert config["imported"]["exit_status"] == "submitted"
    assert config["imported"]["environment"] == "swe_main"


def test_each_step_maps_to_the_tool_chronicles_agent_has() -> None:
    events = one(swe_agent_trajectory()).events
    run = payload(events[3])
    assert (run["command"], run["tool_call_id"]) == ("cat calc.py\n", "call_a")  # by tool call
    assert run["thought"] == "Let me look.\n\n```\ncat calc.py\n```"  # the raw response
    assert payload(events[4])["output"] == ODD_OUTPUT
    assert payload(events[4])["exit_code"] is None  # SWE-agent records none
    edit = payload(events[6])
    assert (edit["command"], edit["old_str"], edit["new_str"]) == ("str_replace", "a - b", "a + b")
    assert edit["tool_call_id"] == "call_b"
    view = payload(events[9])  # no tool call: the action's words
    assert (view["command"], view["path"], view["view_range"]) == (
        "view",
        "/testbed/calc.py",
        [1, 5],
    )
    assert payload(events[10])["path"] == "/testbed/calc.py"
    assert payload(events[14])["command"] == HEREDOC_ACTION
    forfeit = payload(events[17])
    assert (forfeit["tool"], forfeit["arguments"]) == ("exit_forfeit", {"action": "exit_forfeit"})
    assert payload(events[20])["tool_call_id"] == "call_z"
    patch = payload(events[21])
    assert patch["observation"] == "submission" and patch["content"].startswith("diff --git")
    assert [e.cause for e in events[2:5]] == [None, 3, 4]


def test_the_model_calls_record_the_messages_sent() -> None:
    session = one(swe_agent_trajectory())
    first = payload(session.events[2])
    query = swe_agent_trajectory()["trajectory"][0]["query"]
    sent = [{"role": m["role"], "content": m["content"]} for m in query]
    assert first["prompt"] == [content_hash(m) for m in sent]  # SWE-agent's own keys left out
    assert all(
        session.messages[key] == canonical_json(m)
        for key, m in zip(first["prompt"], sent, strict=True)
    )
    assert first["fingerprint"] == fingerprint(
        "claude-sonnet-4-20250514", [stable_hash(m) for m in sent], content_hash({"tools": []}), {}
    )
    tool_message = payload(session.events[5])["prompt"][2]
    assert json.loads(session.messages[tool_message])["tool_call_id"] == "call_a"
    assert first["cost_usd"] is None  # SWE-agent prices the run, not the call
    assert first["response"]["content"] == "Let me look.\n\n```\ncat calc.py\n```"


def test_a_cost_limit_ends_in_a_limit_after_swe_agents_own_step() -> None:
    session = one(swe_agent_trajectory(exit_status="submitted (exit_cost)"))
    own, output, state = session.events[-3:]
    assert (own.kind, own.source, own.cause) == ("imported", "system", None)
    assert payload(own)["thought"] == "Exit due to cost limit"
    assert payload(output)["content"] == "Exited (autosubmitted)" and output.cause == own_seq(
        session, own
    )
    assert payload(state)["state"] == "stopped"
    assert payload(state)["reason"].startswith("reached the cost limit")  # session_state: limit
    assert payload(state)["limit"] == "cost"  # what the views read
    assert session.model_calls == 7


def own_seq(session: ImportedSession, event: Event) -> int:
    return session.events.index(event) + 1


@pytest.mark.parametrize(
    ("status", "state"),
    [
        (None, "finished"),  # no exit status: the last step was a submit
        ("exit_context", "error"),
        ("submitted (exit_format)", "stopped"),
    ],
)
def test_the_ending_follows_the_exit_status(status: str | None, state: str) -> None:
    session = one(swe_agent_trajectory(exit_status=status))
    assert payload(session.events[-1])["state"] == state


def test_an_old_trajectory_without_query_or_history_still_imports() -> None:
    document = {
        "trajectory": [
            {"action": "ls\n", "observation": "calc.py\n", "response": "ls", "thought": "ls"},
            {"action": "submit\n", "observation": "", "response": "submit"},
        ],
        "info": {},
    }
    session = one(document, file="old.traj")
    assert [e.kind for e in session.events] == [
        "session.created", "message", "llm.call", "run", "run.output", "llm.call", "finish",
        "agent.state",
    ]  # fmt: skip
    assert payload(session.events[1])["content"] == "(the recording holds no task message)"
    assert payload(session.events[-1])["state"] == "finished"


def test_a_submitted_flag_is_the_finish_message() -> None:
    """SWE-agent's CTF mode (EnIGMA) ends with ``submit 'FLAG'``: the flag is the answer."""
    [session] = read_recording("swe-agent", SWE_AGENT_CTF, real_recording(SWE_AGENT_CTF))
    [finish] = [e for e in session.events if e.kind == "finish"]
    assert payload(finish)["message"] == CTF_FLAG
    assert finish.cause is not None
    call = session.events[finish.cause - 1]  # seqs start at 1
    # the model's tool call says so too, so a replay's finish is the same
    assert json.loads(payload(call)["response"]["tool_calls"][0]["arguments"]) == {
        "message": CTF_FLAG
    }
    assert payload(session.events[-1])["state"] == "finished"


@pytest.mark.parametrize(
    ("action", "call", "message"),
    [
        ("submit 'HTB{two words}'\n", None, "HTB{two words}"),  # the shell's words, joined
        ("submit flag{a} b\n", None, "flag{a} b"),
        ("submit\n", None, ""),  # a plain submit sends the diff: its observation
        ("submit -f", None, ""),  # review_on_submit's forced submit
        ("submit 'unbalanced", None, "'unbalanced"),
        ("submit", {"flag": "picoCTF{x}"}, "picoCTF{x}"),  # a tool call's own argument
        ("submit", {}, ""),
    ],
)
def test_each_form_of_submit_carries_what_it_sent(
    action: str, call: dict[str, Any] | None, message: str
) -> None:
    step = {"action": action, "observation": "", "response": action, "thought": ""}
    history = []
    if call is not None:
        function = {"name": "submit", "arguments": json.dumps(call)}
        tool_call = {"id": "call_1", "type": "function", "function": function}
        history = [
            {"role": "assistant", "message_type": "action", "action": action,
             "tool_calls": [tool_call]}
        ]  # fmt: skip
    session = one({"trajectory": [step], "history": history, "info": {}}, file="ctf.traj")
    [finish] = [e for e in session.events if e.kind == "finish"]
    assert payload(finish)["message"] == message


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "x.traj: is not a SWE-agent trajectory: expected a JSON object"),
        ({"history": []}, "x.traj, field 'trajectory': is missing"),
        ({"trajectory": {}}, "x.traj, field 'trajectory': is not a list"),
        ({"trajectory": [], "info": "done"}, "x.traj, field 'info': must be an object"),
        ({"trajectory": [3]}, "x.traj, item 0: is not a trajectory step"),
        (
            {"trajectory": [{"action": "ls"}, {"action": ["ls"]}]},
            "x.traj, item 1, field 'action': must be text, not list",
        ),
        ({"trajectory": [{"query": "hi"}]}, "x.traj, item 0, field 'query': must be a list"),
    ],
)
def test_a_bad_file_gets_one_error_naming_the_problem(document: Any, message: str) -> None:
    with pytest.raises(ImportProblem) as raised:
        read_recording("swe-agent", "x.traj", as_bytes(document))
    assert str(raised.value).startswith(message), str(raised.value)


def test_an_unknown_format_is_named() -> None:
    with pytest.raises(
        ImportProblem, match="unknown format 'aider'; the formats are: atif, openhands, swe-agent"
    ):
        read_recording("aider", "x", b"{}")


def test_the_edit_action_words_are_read_as_the_shell_reads_them() -> None:
    document = swe_agent_trajectory()
    document["history"] = []  # no tool calls: the action's text alone
    events = one(document).events
    assert payload(events[6])["old_str"] == "a - b"
    assert EDIT_ACTION.startswith("str_replace_editor str_replace")


def test_a_retry_loops_file_holds_its_chosen_attempt_or_every_attempt() -> None:
    """SWE-agent's RetryAgent writes ``attempts`` (each a trajectory of its own) and, once it
    chose one, copies that one to the top level."""
    chosen, other = swe_agent_trajectory(), swe_agent_trajectory(exit_status="exit_context")
    session = one({"attempts": [other, chosen], **chosen})
    assert payload(session.events[0])["config"]["imported"]["attempts"] == 2
    assert payload(session.events[-1])["state"] == "finished"

    first, second = read_recording("swe-agent", "x.traj", as_bytes({"attempts": [other, chosen]}))
    assert (first.title, second.title) == ("swe-agent: x (attempt 0)", "swe-agent: x (attempt 1)")
    assert first.session_id != second.session_id
    assert payload(first.events[-1])["state"] == "error"
    assert payload(second.events[3])["imported"]["attempt"] == 1
    assert payload(second.events[0])["config"]["imported"]["attempt"] == 1

    broken = {"attempts": [chosen, {"trajectory": [{"action": 3}]}]}
    with pytest.raises(ImportProblem) as raised:
        read_recording("swe-agent", "x.traj", as_bytes(broken))
    assert str(raised.value) == "x.traj, attempt 1, item 0, field 'action': must be text, not int"
