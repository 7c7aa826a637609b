"""Resuming sessions left behind by unusual model output: from the log alone, to ``finish``.

Two states a session can be found in: the run died while the model call was in flight (the
session shows ``running``, no ``llm.call``: what every case of ``test_model_output`` left
before), and a recorded ``llm.call`` whose consequences were never appended (a process that
died in between, or an older version that recorded the call first).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import uuid
from pathlib import Path

from app.events import LlmCall, LlmResponse, Message, ToolCall
from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.cli import cli_environment
from tests.support.fake_llm import FakeLlmServer, Reply, raw_tool_call, tool_call
from tests.support.forked import chronicle_popen, chronicle_run
from tests.support.waiting import before_exit

FINISH = Reply(tool_calls=[tool_call("finish", message="done")])


def agent_env(fake: FakeLlmServer, database_url: str, tmp_path: Path) -> dict[str, str]:
    return cli_environment(database_url, tmp_path) | {
        "CHRONICLE_LLM_MODEL": "openai/fake-model",
        "CHRONICLE_LLM_BASE_URL": fake.base_url,
        "CHRONICLE_LLM_API_KEY": "sk-fake",
        "CHRONICLE_LLM_RETRY_MIN_WAIT": "0.01",
        "CHRONICLE_LLM_RETRY_MAX_WAIT": "0.05",
        "CHRONICLE_POLL_INTERVAL": "0.5",
    }


async def test_resume_after_a_run_died_waiting_for_an_unusable_reply(
    store: EventStore, fake_llm: FakeLlmServer, database_url: str, tmp_path: Path
) -> None:
    """`chronicle run` killed while the model call is in flight, then `chronicle resume`,
    whose calls get an HTML page with status 200, a tool call with ``1e999``, and a 1.2 MB
    create holding NUL of a file named with a lone surrogate."""
    env = agent_env(fake_llm, database_url, tmp_path)
    session = uuid.uuid4()
    (tmp_path / "ws").mkdir()
    fake_llm.script(Reply(content="never read", delay=30))
    run = chronicle_popen(
        ["run", "--workspace", str(tmp_path / "ws"),
         "--session", str(session), "Do the task."],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        await before_exit(
            fake_llm.wait_until(lambda fake: len(fake.requests) >= 1),
            run,
            timeout=60,
            what="the model call in flight",
        )
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(10)
    assert not [e for e in await store.read(session) if e.kind == "llm.call"]

    fake_llm.replies.clear()
    text = "x\x00y " * 200_000  # 1.2 MB with NUL, to a file whose name is not UTF-8
    big = tool_call("str_replace_editor", command="create", path="caf\udce9.txt", file_text=text)
    fake_llm.script(
        Reply(body="<html><body>Gateway login</body></html>", content_type="text/html"),
        Reply(tool_calls=[raw_tool_call("execute_bash", '{"command": "ls", "timeout": 1e999}')]),
        Reply(content="Saving a\x00b.", tool_calls=[big]),
        FINISH,
    )
    resumed = await asyncio.to_thread(
        chronicle_run,
        ["resume", str(session)],
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
    )  # errors="replace": the file name is printed as the bytes it is, not UTF-8
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "finished" in resumed.stdout and "Traceback" not in resumed.stderr
    events = await store.read(session)
    calls = [e for e in events if e.kind == "llm.call"]
    assert [c.payload["error_kind"] for c in calls] == ["bad_response", None, None, None]
    errors = [e.payload["message"] for e in events if e.kind == "error"]
    assert "not JSON" in errors[0] and fake_llm.base_url in errors[0]
    assert "timeout must be a finite number" in errors[1]
    assert calls[2].payload["response"]["content"] == "Saving a\x00b."
    [written] = [e for e in events if e.kind == "file.edit.output"]
    assert written.cause is not None and events[written.cause - 1].payload["file_text"] == text
    assert (tmp_path / "ws" / "caf\udce9.txt").read_text() == text
    assert events[-2].payload["state"] == "finished"
    assert (await store.verify(session)).ok


async def test_resume_turns_a_recorded_call_into_what_it_leads_to(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    """Recorded calls without their consequences: an unusable reply, then a tool call whose
    timeout is not finite; resume appends the error each leads to and goes on."""
    settings = settings_for(fake_llm, tmp_path)
    fake_llm.script(Reply(content="Which file?"))
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=tmp_path / "ws"), task="Fix it."
    )
    assert outcome == "awaiting_user_input"
    *_, unusable = await store.append(
        session,
        [
            Message(content="main.py"),
            LlmCall(
                model="openai/fake-model",
                fingerprint="f",
                error="the model returned no choices",
                error_kind="bad_response",
            ),
        ],
    )
    fake_llm.script(FINISH)
    _, outcome = await run_session(store, settings, SessionOptions(), session_id=session)
    assert outcome == "finished"
    events = await store.read(session)
    [error] = [e for e in events if e.cause == unusable.seq]
    assert error.kind == "error" and error.payload["message"] == "the model returned no choices"
    assert "the model returned no choices" in json.dumps(fake_llm.requests[-1]["messages"])

    infinite = ToolCall(
        id="c9", name="execute_bash", arguments='{"command": "ls", "timeout": 1e999}'
    )
    *_, call = await store.append(
        session,
        [
            Message(content="Once more."),
            LlmCall(
                model="openai/fake-model",
                fingerprint="f",
                response=LlmResponse(tool_calls=[infinite], finish_reason="tool_calls"),
            ),
        ],
    )
    fake_llm.script(FINISH)
    _, outcome = await run_session(store, settings, SessionOptions(), session_id=session)
    assert outcome == "finished"
    [error] = [e for e in await store.read(session) if e.cause == call.seq]
    assert error.kind == "error" and "timeout must be a finite number" in error.payload["message"]
    assert (await store.verify(session)).ok
