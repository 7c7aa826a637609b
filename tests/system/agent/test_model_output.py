"""Valid but unusual model output, through the real gateway, controller and a local sandbox.

Each case was, before: ``chronicle run`` ending in an error or a traceback, the paid call
lost, the session ``running`` forever, and ``resume`` crashing the same way. Now each gives a
recorded ``llm.call``, then the action's real observation or an ``error`` the model reads
on its next call, and the session goes on to ``finish``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from app.llm.wire import for_the_wire
from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore, RecordedEvent
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, raw_completion, raw_tool_call, tool_call

FINISH = Reply(tool_calls=[tool_call("finish", message="done")])
MIB = 1024 * 1024


async def run(
    store: EventStore, fake: FakeLlmServer, tmp_path: Path, *replies: Reply, **settings: Any
) -> tuple[UUID, str, list[RecordedEvent]]:
    fake.script(*replies)
    session, outcome = await run_session(
        store,
        settings_for(fake, tmp_path, **settings),
        SessionOptions(workspace=tmp_path / "ws"),
        task="Do the task.",
    )
    return session, outcome, await store.read(session)


def calls(events: list[RecordedEvent]) -> list[RecordedEvent]:
    return [e for e in events if e.kind == "llm.call"]


def answer(events: list[RecordedEvent], cause: int) -> RecordedEvent:
    """The one observation (environment event) caused by ``cause``."""
    [found] = [e for e in events if e.cause == cause and e.source == "environment"]
    return found


def first_action(events: list[RecordedEvent], kind: str) -> RecordedEvent:
    return next(e for e in events if e.kind == kind)


async def finished_and_sound(store: EventStore, session: UUID, outcome: str) -> None:
    assert outcome == "finished"
    events = await store.read(session)
    assert events[-2].kind == "agent.state" and events[-2].payload["state"] == "finished"
    assert (await store.verify(session)).ok


# -- tool arguments ----------------------------------------------------------------------------


async def test_a_lone_surrogate_in_a_path_is_the_file_name_it_stands_for(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    # "caf\udce9.txt" is how Python spells the non-UTF-8 name b"caf\xe9.txt": it round-trips.
    create = tool_call(
        "str_replace_editor", command="create", path="caf\udce9.txt", file_text="hi\n"
    )
    view = tool_call("str_replace_editor", command="view", path=".")
    session, outcome, events = await run(
        store, fake_llm, tmp_path,
        Reply(tool_calls=[create]),
        Reply(content="Listing caf\udce9.txt's folder.", tool_calls=[view]),
        FINISH,
    )  # fmt: skip
    call = calls(events)[0]
    assert "caf\\udce9.txt" in call.payload["response"]["tool_calls"][0]["arguments"]
    edit = first_action(events, "file.edit")
    assert edit.cause == call.seq and edit.payload["path"] == "caf\udce9.txt"
    assert answer(events, edit.seq).kind == "file.edit.output"
    assert b"caf\xe9.txt" in os.listdir(os.fsencode(tmp_path / "ws"))
    assert (tmp_path / "ws" / "caf\udce9.txt").read_bytes() == b"hi\n"
    # The reply text holds the surrogate; it goes back to the model as its escape (UTF-8
    # cannot carry it). Before: litellm could not encode the next request at all.
    listing = answer(events, [e for e in events if e.kind == "file.edit"][1].seq)
    assert listing.kind == "file.edit.output"
    last_prompt = fake_llm.requests[2]["messages"]
    assert "Listing caf\\udce9.txt's folder." in [m.get("content") for m in last_prompt]
    assert last_prompt[-1]["content"] == for_the_wire(listing.payload["content"])
    await finished_and_sound(store, session, outcome)


async def test_nul_in_arguments_and_in_content(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    create = tool_call("str_replace_editor", command="create", path="nul.bin", file_text="a\x00b")
    echo = tool_call("execute_bash", command="echo a\x00b && echo caf\udce9")
    session, outcome, events = await run(
        store, fake_llm, tmp_path,
        Reply(content="Writing a\x00b.", tool_calls=[create]),
        Reply(tool_calls=[echo]),
        FINISH,
    )  # fmt: skip
    call = calls(events)[0]
    assert call.payload["response"]["content"] == "Writing a\x00b."
    edit = first_action(events, "file.edit")
    assert edit.payload["file_text"] == "a\x00b" and edit.payload["thought"] == "Writing a\x00b."
    assert answer(events, edit.seq).kind == "file.edit.output"
    assert (tmp_path / "ws" / "nul.bin").read_bytes() == b"a\x00b"
    # The model read its own reply back, NUL and all, on the next call.
    assert "Writing a\\u0000b." in json.dumps(fake_llm.requests[1]["messages"])
    # A command holding NUL and a surrogate runs (bash drops the NUL) and is answered.
    command = first_action(events, "run")
    assert command.payload["command"] == "echo a\x00b && echo caf\udce9"
    output = answer(events, command.seq)
    assert output.kind == "run.output" and output.payload["exit_code"] == 0
    assert output.payload["output"].startswith("ab\ncaf")
    await finished_and_sound(store, session, outcome)


async def test_nul_in_a_text_reply_reaches_the_user(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    session, outcome, events = await run(
        store, fake_llm, tmp_path, Reply(body=raw_completion('{"content": "Which\\u0000 file?"}'))
    )
    assert outcome == "awaiting_user_input"
    [message] = [e for e in events if e.kind == "message" and e.source == "agent"]
    assert message.payload["content"] == "Which\x00 file?"
    fake_llm.script(FINISH)
    _, outcome = await run_session(
        store, settings_for(fake_llm, tmp_path), SessionOptions(), task="a.py", session_id=session
    )
    await finished_and_sound(store, session, outcome)


async def test_a_create_of_1_2_mb(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    text = "".join(f"line {i:07d} of a generated file\n" for i in range(40_000))
    assert len(text) > 1_200_000
    create = tool_call("str_replace_editor", command="create", path="big.txt", file_text=text)
    session, outcome, events = await run(
        store, fake_llm, tmp_path, Reply(tool_calls=[create]), FINISH
    )
    [call, _] = calls(events)
    assert json.loads(call.payload["response"]["tool_calls"][0]["arguments"])["file_text"] == text
    edit = first_action(events, "file.edit")
    assert edit.payload["file_text"] == text
    assert answer(events, edit.seq).kind == "file.edit.output"
    assert (tmp_path / "ws" / "big.txt").read_text() == text
    await finished_and_sound(store, session, outcome)


async def test_a_response_over_1_mib(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    thought = "Thinking out loud. " * (MIB // 18)
    assert len(thought) > MIB
    run_it = tool_call("execute_bash", command="echo ran")
    session, outcome, events = await run(
        store, fake_llm, tmp_path, Reply(content=thought, tool_calls=[run_it]), FINISH
    )
    [call, _] = calls(events)
    assert call.payload["response"]["content"] == thought
    command = first_action(events, "run")
    assert command.payload["thought"] == thought
    assert answer(events, command.seq).payload["output"] == "ran\n"
    await finished_and_sound(store, session, outcome)


async def test_a_timeout_of_1e999_is_an_error_saying_it_is_not_finite(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    infinite = raw_tool_call("execute_bash", '{"command": "echo hi", "timeout": 1e999}')
    session, outcome, events = await run(
        store, fake_llm, tmp_path, Reply(tool_calls=[infinite]), FINISH
    )
    [call, _] = calls(events)
    assert "1e999" in call.payload["response"]["tool_calls"][0]["arguments"]
    error = answer(events, call.seq)
    assert error.kind == "error" and "timeout must be a finite number" in error.payload["message"]
    assert not [e for e in events if e.kind == "run"]
    assert "timeout must be a finite number" in json.dumps(fake_llm.requests[1]["messages"])
    await finished_and_sound(store, session, outcome)


async def test_arguments_as_models_send_them(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    # Before: "is_input": "false" was true, so the command was typed into no process at all.
    typed = raw_tool_call(
        "execute_bash", '{"command": "echo typed", "is_input": "false", "timeout": "5"}'
    )
    missing = raw_tool_call("str_replace_editor", '{"command": "view"}')
    session, outcome, events = await run(
        store, fake_llm, tmp_path, Reply(tool_calls=[typed]), Reply(tool_calls=[missing]), FINISH
    )
    command = first_action(events, "run")
    assert command.payload["is_input"] is False and command.payload["timeout"] == 5
    output = answer(events, command.seq)
    assert output.payload["output"] == "typed\n" and output.payload["exit_code"] == 0
    second = calls(events)[1]
    assert "missing path" in answer(events, second.seq).payload["message"]
    await finished_and_sound(store, session, outcome)


@pytest.mark.filterwarnings("error:Pydantic serializer warnings:UserWarning")
async def test_arguments_sent_as_an_object_are_read_without_a_warning(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    """Before: the call worked, and pydantic printed a five-line serializer warning (the
    object in the SDK's ``str`` field); as an error here, litellm reported the reply as a
    server error and the command never ran."""
    as_object = raw_completion(
        '{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": '
        '"function", "function": {"name": "execute_bash", "arguments": '
        '{"command": "echo caf\\u00e9"}}}]}',
        finish_reason="tool_calls",
    )
    session, outcome, events = await run(store, fake_llm, tmp_path, Reply(body=as_object), FINISH)
    [sent] = calls(events)[0].payload["response"]["tool_calls"]
    assert json.loads(sent["arguments"]) == {"command": "echo café"}
    command = first_action(events, "run")
    assert command.payload["command"] == "echo café"
    assert answer(events, command.seq).payload["output"] == "café\n"
    await finished_and_sound(store, session, outcome)


# -- replies that cannot be used ---------------------------------------------------------------


async def test_no_choices_is_a_recorded_call_and_an_error_the_model_reads(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    empty = Reply(
        body='{"id": "x", "object": "chat.completion", "created": 1, "model": "m", '
        '"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 0, "total_tokens": 7}}'
    )
    session, outcome, events = await run(store, fake_llm, tmp_path, empty, FINISH)
    [bad, _] = calls(events)
    assert bad.payload["error"] == "the model returned no choices"
    assert (
        bad.payload["error_kind"] == "bad_response" and bad.payload["usage"]["prompt_tokens"] == 7
    )
    error = answer(events, bad.seq)
    assert error.kind == "error" and error.payload["message"] == "the model returned no choices"
    assert len(fake_llm.requests) == 2  # not retried: the next step is the next call
    assert "the model returned no choices" in json.dumps(fake_llm.requests[1]["messages"])
    await finished_and_sound(store, session, outcome)


async def test_an_html_page_with_status_200_names_the_url_and_says_not_json(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    html = Reply(body="<html><body><h1>Sign in</h1></body></html>", content_type="text/html")
    session, outcome, events = await run(store, fake_llm, tmp_path, html, FINISH)
    [bad, _] = calls(events)
    message = bad.payload["error"]
    assert fake_llm.base_url in message and "not JSON" in message and "Sign in" in message
    assert bad.payload["error_kind"] == "bad_response" and bad.payload["attempts"] == 1
    assert answer(events, bad.seq).payload["message"] == message
    assert len(fake_llm.requests) == 2  # not retried (see app/llm/retry.py for why)
    await finished_and_sound(store, session, outcome)


async def test_an_empty_reply_is_reported_as_such_and_the_session_goes_on(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    # Before: "awaiting_user_input", "the agent asked for your input".
    session, outcome, events = await run(store, fake_llm, tmp_path, Reply(content=None), FINISH)
    [empty, _] = calls(events)
    error = answer(events, empty.seq)
    assert error.kind == "error" and "the model sent an empty reply" in error.payload["message"]
    states = [e.payload["reason"] for e in events if e.kind == "agent.state"]
    assert not any("asked for your input" in reason for reason in states)
    await finished_and_sound(store, session, outcome)


async def test_empty_replies_again_and_again_end_as_stuck(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    _, outcome, events = await run(
        store, fake_llm, tmp_path, *[Reply(content="") for _ in range(10)]
    )
    assert outcome == "error" and len(fake_llm.requests) == 3
    assert "the model sent an empty reply" in events[-2].payload["reason"]
    assert "stuck" in events[-2].payload["reason"]


# -- tool calling modes ------------------------------------------------------------------------


async def test_native_tool_calls_are_used_when_tools_were_in_the_prompt(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    # Before: dropped, and the session stopped "awaiting input".
    # With text next to them: before, the text was parsed for calls and the native ones lost.
    native = Reply(
        content="I will run it.", tool_calls=[tool_call("execute_bash", command="echo native")]
    )
    session, outcome, events = await run(
        store, fake_llm, tmp_path, native, FINISH, llm_native_tool_calling=False
    )
    assert "tools" not in fake_llm.requests[0]  # the tools were described in the prompt
    assert calls(events)[0].payload["tool_calling"] == "prompt"
    command = first_action(events, "run")
    assert answer(events, command.seq).payload["output"] == "native\n"
    await finished_and_sound(store, session, outcome)


async def test_an_unknown_model_behind_a_base_url_calls_tools_natively(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    # Before: unknown to litellm's map, so tools went into the prompt.
    session, outcome, events = await run(
        store, fake_llm, tmp_path, FINISH, llm_native_tool_calling=None
    )
    assert [t["function"]["name"] for t in fake_llm.requests[0]["tools"]][:2] == [
        "execute_bash",
        "str_replace_editor",
    ]
    assert calls(events)[0].payload["tool_calling"] == "native"
    await finished_and_sound(store, session, outcome)


@pytest.mark.parametrize(
    "error",
    [
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        "registry.ollama.ai/library/gemma:2b does not support tools",
    ],
)
async def test_a_server_refusing_native_tools_says_how_to_switch(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, error: str
) -> None:
    _, outcome, events = await run(
        store, fake_llm, tmp_path, Reply(status=400, error=error), llm_native_tool_calling=None
    )
    assert outcome == "error"
    assert "llm_native_tool_calling = false" in events[-2].payload["reason"]
    assert "llm_native_tool_calling" in calls(events)[0].payload["error"]


# -- a step the store refuses ------------------------------------------------------------------


async def test_an_action_too_large_to_record_keeps_its_call_and_tells_the_model(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    # A view_range of 600,000 numbers: no long string to move to a blob, so the file.edit is
    # over the per-event limit. Before: EventTooLargeError ended the run, the call lost.
    numbers = ",".join(["1"] * 600_000)
    huge = raw_tool_call(
        "str_replace_editor", f'{{"command": "view", "path": ".", "view_range": [{numbers}]}}'
    )
    session, outcome, events = await run(
        store, fake_llm, tmp_path, Reply(tool_calls=[huge]), FINISH
    )
    [call, _] = calls(events)
    assert call.payload["error"] is None and call.payload["response"]["tool_calls"]
    error = answer(events, call.seq)
    assert "what the model asked for could not be recorded" in error.payload["message"]
    assert "file.edit" in error.payload["message"] and not [
        e for e in events if e.kind == "file.edit"
    ]
    await finished_and_sound(store, session, outcome)


async def test_a_reply_too_large_to_record_is_recorded_without_its_response(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    many = [tool_call("think", thought=f"step {i}") for i in range(15_000)]
    session, outcome, events = await run(
        store, fake_llm, tmp_path, Reply(tool_calls=many, prompt_tokens=9), FINISH
    )
    [call, _] = calls(events)
    assert (
        call.payload["error_kind"] == "bad_response" and call.payload["usage"]["prompt_tokens"] == 9
    )
    assert "the model's reply could not be recorded" in call.payload["error"]
    assert call.payload["response"]["tool_calls"] == []
    assert answer(events, call.seq).payload["message"] == call.payload["error"]
    await finished_and_sound(store, session, outcome)
