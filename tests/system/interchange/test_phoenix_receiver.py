"""`chronicle export --otlp` into a real OTLP receiver that nobody here wrote: Arize Phoenix
from PyPI (tests/support/phoenix.py), started once for this file. A session run for real (the
agent, a local sandbox, litellm against the fake model: five model calls, a command that
fails) is sent as a user sends it, and Phoenix's own REST API gives back the trace: its id,
the ``invoke_agent`` span over the ``chat`` and ``execute_tool`` spans, the GenAI attributes
as sent, and what Phoenix made of them (its OpenInference ``llm.*`` and ``tool.*``
attributes, which it derives only from attributes and contents that are well formed)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.events.registry import AWAITED_KINDS
from app.projections.otlp.ids import SESSION_SPAN, span_id
from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore, RecordedEvent
from tests.support.agent_session import settings_for
from tests.support.cli import chronicle, cli_environment, demo_session
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.phoenix import Phoenix, running_phoenix
from tests.support.recordings import record
from tests.support.venvs import installed_venv

#: The Phoenix project the exports go to (its ``x-project-name`` header).
PROJECT = "chronicle"
#: The attributes that carry text of the session (only with --content).
CONTENT = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    venv = installed_venv("phoenix")
    with running_phoenix(venv, tmp_path_factory.mktemp("phoenix")) as server:
        yield server


def export(phoenix: Phoenix, env: dict[str, str], *args: str) -> dict[str, int]:
    """``chronicle export --otlp`` of ``args`` to Phoenix's project; spans sent by session."""
    sent = chronicle(
        "export", "--otlp", phoenix.url, *args, "--header", f"x-project-name={PROJECT}",
        env=env, timeout=120,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert f"to {phoenix.traces_url}" in sent.stderr, sent.stderr
    return {
        found[1]: int(found[2]) for found in re.finditer(r"^(\S+): (\d+) spans$", sent.stderr, re.M)
    }


async def record_failing(store: EventStore, fake: FakeLlmServer, tmp_path: Path) -> uuid.UUID:
    """A session run for real whose model lists the files, then refuses the key: it ends in
    ``error``, its second model call failed."""
    fake.script(
        Reply(tool_calls=[tool_call("execute_bash", command="ls")]),
        Reply(status=401, error="Incorrect API key provided"),
    )
    session, outcome = await run_session(
        store, settings_for(fake, tmp_path), SessionOptions(workspace=tmp_path / "ws"),
        task="List the files.",
    )  # fmt: skip
    assert outcome == "error"
    return session


def expected_ids(session: uuid.UUID, events: list[RecordedEvent]) -> dict[str, RecordedEvent]:
    """The hex span id of each model call and each action a service answers, from the log."""
    return {
        span_id(session, event.seq).hex(): event
        for event in events
        if event.kind == "llm.call" or event.kind in AWAITED_KINDS
    }


def by_operation(spans: list[dict[str, Any]], operation: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["attributes"].get("gen_ai.operation.name") == operation]


async def test_a_session_run_for_real_reaches_phoenix_as_its_trace_with_its_contents(
    phoenix: Phoenix,
    store: EventStore,
    fake_llm: FakeLlmServer,
    tmp_path: Path,
    app_database_url: str,
) -> None:
    session = await record(store, fake_llm, tmp_path)
    events = await store.read(session)
    sent = export(phoenix, cli_environment(app_database_url, tmp_path), str(session), "--content")
    children = expected_ids(session, events)
    assert sent == {str(session): 1 + len(children)}
    spans = await phoenix.wait_for_spans(PROJECT, session.hex, 1 + len(children))
    assert len(spans) == 1 + len(children)
    assert {span["context"]["trace_id"] for span in spans} == {session.hex}

    # one invoke_agent span at the root, every chat and execute_tool span under it
    [root] = [span for span in spans if span["parent_id"] is None]
    assert root["context"]["span_id"] == span_id(session, SESSION_SPAN).hex()
    assert (root["name"], root["span_kind"]) == ("invoke_agent codeact", "AGENT")
    assert {span["context"]["span_id"] for span in spans if span is not root} == set(children)
    assert {span["parent_id"] for span in spans if span is not root} == {root["context"]["span_id"]}
    calls = [event for event in events if event.kind == "llm.call"]
    assert {
        key: root["attributes"][key]
        for key in ("gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.provider.name",
                    "gen_ai.conversation.id", "gen_ai.request.model",
                    "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
    } == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "codeact",
        "gen_ai.provider.name": "openai",
        "gen_ai.conversation.id": str(session),
        "gen_ai.request.model": "openai/fake-model",
        "gen_ai.usage.input_tokens": sum(c.payload["usage"]["prompt_tokens"] for c in calls),
        "gen_ai.usage.output_tokens": sum(c.payload["usage"]["completion_tokens"] for c in calls),
    }  # fmt: skip
    assert root["status_code"] == "UNSET"  # the session finished
    # Phoenix's own session, from gen_ai.conversation.id, counts the model calls' tokens once
    assert root["attributes"]["session.id"] == str(session)
    in_phoenix = await phoenix.session(str(session))
    assert [trace["trace_id"] for trace in in_phoenix["traces"]] == [session.hex]
    assert (in_phoenix["token_count_prompt"], in_phoenix["token_count_completion"]) == (
        root["attributes"]["gen_ai.usage.input_tokens"],
        root["attributes"]["gen_ai.usage.output_tokens"],
    )

    chats = by_operation(spans, "chat")
    assert len(chats) == len(calls) == 5
    for chat in chats:
        call = children[chat["context"]["span_id"]].payload
        attributes = chat["attributes"]
        response, usage = call["response"], call["usage"]
        assert chat["name"] == "chat openai/fake-model" and chat["span_kind"] == "LLM"
        assert chat["status_code"] == "UNSET" and "error.type" not in attributes
        assert {
            key: attributes[key]
            for key in ("gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model",
                        "gen_ai.response.id", "gen_ai.response.finish_reasons",
                        "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
                        "gen_ai.conversation.id")
        } == {
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "openai/fake-model",
            "gen_ai.response.model": response["model"],
            "gen_ai.response.id": response["id"],
            "gen_ai.response.finish_reasons": [response["finish_reason"]],
            "gen_ai.usage.input_tokens": usage["prompt_tokens"],
            "gen_ai.usage.output_tokens": usage["completion_tokens"],
            "gen_ai.conversation.id": str(session),
        }  # fmt: skip
        assert response["id"].startswith("chatcmpl-") and response["model"] == "fake-model"
        # the contents, as sent, and as Phoenix read them (it drops a whole list of messages
        # when one of them does not match the conventions' schema)
        sent_in = json.loads(attributes["gen_ai.input.messages"])
        sent_out = json.loads(attributes["gen_ai.output.messages"])
        assert sent_in[0]["role"] == "system" and sent_in[1]["role"] == "user"
        for index, message in enumerate(sent_in):
            assert attributes[f"llm.input_messages.{index}.message.role"] == message["role"]
        [asked] = response["tool_calls"]
        [out] = sent_out
        assert out["parts"][-1]["name"] == asked["name"]
        derived = "llm.output_messages.0.message.tool_calls.0.tool_call"
        assert attributes[f"{derived}.function.name"] == asked["name"]
        assert attributes[f"{derived}.id"] == asked["id"]
        assert attributes["llm.model_name"] == "openai/fake-model"
        assert attributes["llm.provider"] == "openai"
        assert attributes["llm.token_count.prompt"] == usage["prompt_tokens"]
        assert attributes["llm.token_count.completion"] == usage["completion_tokens"]
        assert attributes["session.id"] == str(session)
    later = max(chats, key=lambda chat: chat["start_time"])["attributes"]
    assert later["llm.input_messages.2.message.role"] == "assistant"  # the first reply
    assert later["llm.input_messages.3.message.role"] == "tool"  # its answer
    assert "llm.input_messages.3.message.tool_call_id" in later

    tools = by_operation(spans, "execute_tool")
    assert len(tools) == len(children) - len(calls) == 4
    named = {
        asked["id"]: asked["name"] for c in calls for asked in c.payload["response"]["tool_calls"]
    }
    for tool in tools:
        action = children[tool["context"]["span_id"]].payload
        attributes = tool["attributes"]
        name = named[action["tool_call_id"]]
        assert tool["name"] == f"execute_tool {name}" and tool["span_kind"] == "TOOL"
        assert attributes["gen_ai.tool.name"] == attributes["tool.name"] == name
        assert attributes["gen_ai.tool.call.id"] == attributes["tool.id"] == action["tool_call_id"]
        assert attributes["gen_ai.conversation.id"] == str(session)
        assert json.loads(attributes["gen_ai.tool.call.arguments"])
        assert attributes["output.value"] == attributes["gen_ai.tool.call.result"]
    [failed] = [tool for tool in tools if tool["status_code"] == "ERROR"]
    assert failed["attributes"]["error.type"] == "exit_code"
    assert failed["status_message"] == "exited 1"
    assert (
        "ZeroDivisionError" in json.loads(failed["attributes"]["gen_ai.tool.call.result"])["output"]
    )
    assert sum("error.type" in tool["attributes"] for tool in tools) == 1


async def test_a_failed_session_without_contents_and_sent_again_keeps_one_copy(
    phoenix: Phoenix,
    store: EventStore,
    fake_llm: FakeLlmServer,
    tmp_path: Path,
    app_database_url: str,
) -> None:
    session = await record_failing(store, fake_llm, tmp_path)
    env = cli_environment(app_database_url, tmp_path)
    events = await store.read(session)
    children = expected_ids(session, events)
    assert len(children) == 3  # two model calls, one command
    assert export(phoenix, env, str(session)) == {str(session): 4}
    spans = await phoenix.wait_for_spans(PROJECT, session.hex, 4)
    ids = {span_id(session, SESSION_SPAN).hex(), *children}
    assert {span["context"]["span_id"] for span in spans} == ids
    for span in spans:  # no text of the session without --content
        assert not [key for key in span["attributes"] if key.startswith(CONTENT)], span
        assert not [key for key in span["attributes"] if key.startswith(
            ("llm.input_messages", "llm.output_messages", "tool.parameters")
        )], span  # fmt: skip

    [root] = by_operation(spans, "invoke_agent")
    state = [event for event in events if event.kind == "agent.state"][-1]
    assert (root["status_code"], root["status_message"]) == ("ERROR", state.payload["reason"])
    answered, failed = sorted(by_operation(spans, "chat"), key=lambda chat: chat["start_time"])
    usage = children[answered["context"]["span_id"]].payload["usage"]
    assert answered["status_code"] == "UNSET" and "error.type" not in answered["attributes"]
    assert answered["attributes"]["gen_ai.usage.input_tokens"] == usage["prompt_tokens"] > 0
    assert answered["attributes"]["llm.token_count.prompt"] == usage["prompt_tokens"]
    call = children[failed["context"]["span_id"]].payload
    assert failed["status_code"] == "ERROR" and failed["span_kind"] == "LLM"
    assert failed["attributes"]["error.type"] == call["error_kind"] == "auth"
    assert failed["status_message"] == call["error"]
    [listed] = by_operation(spans, "execute_tool")
    assert listed["attributes"]["gen_ai.tool.name"] == "execute_bash"
    assert listed["status_code"] == "UNSET" and "error.type" not in listed["attributes"]

    # Sent again, with contents now, then a session Phoenix has not seen: once that one is
    # stored, so is the repeat (Phoenix stores spans in the order it gets them). Phoenix kept
    # the first copy of each span (the second export's ids are the first's), contents and all.
    demo = demo_session(env)
    assert export(phoenix, env, str(session), demo, "--content") == {str(session): 4, demo: 2}
    await phoenix.wait_for_spans(PROJECT, uuid.UUID(demo).hex, 2)
    again = await phoenix.spans(PROJECT, session.hex)
    assert sorted(span["context"]["span_id"] for span in again) == sorted(ids)
    assert not [key for span in again for key in span["attributes"] if key.startswith(CONTENT)]
    # with the trace deleted there, the contents go
    await phoenix.delete_trace(session.hex)
    assert export(phoenix, env, str(session), "--content") == {str(session): 4}
    spans = await phoenix.wait_for_spans(PROJECT, session.hex, 4)
    assert {key for span in spans for key in span["attributes"] if key.startswith(CONTENT)} == {
        *CONTENT
    }
