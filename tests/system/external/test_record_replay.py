"""``chronicle record --replay SESSION -- COMMAND``: a real ``chronicle serve``, agents on the
official ``openai`` and ``anthropic`` SDKs recorded against the fake model, then run again
with the gateway answering from the recording. The fake model, left with no scripted reply,
fails every request it gets: a replay that matched shows it got none."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply
from tests.support.postgres import PgServer
from tests.support.record_gateway import (
    USER,
    events,
    fake_model,
    recording_server,
    session_of,
)


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeLlmServer]:
    server = fake_model()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gateway(
    pg_server: PgServer,
    pg_template: str,
    tmp_path_factory: pytest.TempPathFactory,
    upstream: FakeLlmServer,
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("replay")
    yield from recording_server(pg_server, pg_template, root, upstream)


#: An agent on the openai SDK: a system prompt and questions from its environment, each
#: question one call (streamed with AGENT_STREAM=1).
OPENAI_AGENT = textwrap.dedent(
    """
    import os
    from openai import OpenAI

    client = OpenAI()
    system = os.environ.get("AGENT_SYSTEM", "You answer in one word.")
    answers = []
    for question in os.environ.get("AGENT_QUESTIONS", "first?|second?").split("|"):
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": question},
        ]
        if os.environ.get("AGENT_STREAM") == "1":
            stream = client.chat.completions.create(
                model="scripted", messages=messages, stream=True
            )
            answers.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
        else:
            reply = client.chat.completions.create(model="scripted", messages=messages)
            answers.append(reply.choices[0].message.content)
    print(" ".join(answers))
    """
)

#: An agent on the anthropic SDK that streams its one call.
ANTHROPIC_AGENT = textwrap.dedent(
    """
    import os
    import anthropic

    client = anthropic.Anthropic()
    with client.messages.stream(
        model="scripted",
        max_tokens=50,
        system=os.environ.get("AGENT_SYSTEM", "You answer in one word."),
        messages=[{"role": "user", "content": "hi"}],
    ) as stream:
        print("".join(stream.text_stream))
    """
)


def _workspace(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "openai_agent.py").write_text(OPENAI_AGENT)
    (path / "anthropic_agent.py").write_text(ANTHROPIC_AGENT)
    return path


def _run(
    gateway: ServerProcess,
    workspace: Path,
    agent: str,
    *options: str,
    **environment: str,
) -> Any:
    env = {**gateway.env, **environment}
    common = ["--user", USER, "--url", gateway.url, "--workspace", str(workspace)]
    return chronicle("record", *common, *options, "--", sys.executable, agent, env=env, timeout=120)


def _recorded(
    gateway: ServerProcess, upstream: FakeLlmServer, workspace: Path, agent: str, *replies: Reply
) -> str:
    """Record ``agent`` answered by ``replies``; the session's id. The fake model then has
    no reply left: every request that reaches it from here on fails."""
    upstream.replies.clear()
    upstream.script(*replies)
    recorded = _run(gateway, workspace, agent)
    assert recorded.returncode == 0, recorded.stderr
    assert not upstream.replies
    return session_of(recorded)


def _replay_session(result: Any) -> str:
    """The replay's own session (``chronicle record`` prints it as it starts)."""
    return session_of(result)


def _result(gateway: ServerProcess, session: str) -> dict[str, Any]:
    log = events(gateway, session)
    assert log[-1]["kind"] == "replay.result", [e["kind"] for e in log]
    return dict(log[-1]["payload"])


def test_a_replay_serves_the_recording_and_calls_no_model(
    gateway: ServerProcess, upstream: FakeLlmServer, tmp_path: Path
) -> None:
    workspace = _workspace(tmp_path)
    recording = _recorded(
        gateway, upstream, workspace, "openai_agent.py", Reply(content="one"), Reply(content="two")
    )
    asked = len(upstream.requests)

    replayed = _run(gateway, workspace, "openai_agent.py", "--replay", recording)

    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == "one two\n"  # the recorded answers, the agent's own stdout
    assert len(upstream.requests) == asked  # zero upstream calls
    assert "2 model calls served, matched" in replayed.stderr
    replay = _replay_session(replayed)
    log = events(gateway, replay)
    created = log[0]["payload"]
    assert created["config"]["replay_of"] == recording
    assert created["config"]["replay_mode"] == "strict"
    calls = [e for e in log if e["kind"] == "llm.call"]
    recorded_calls = [e for e in events(gateway, recording) if e["kind"] == "llm.call"]
    assert [c["payload"]["replayed_from"] for c in calls] == [c["seq"] for c in recorded_calls]
    assert [c["payload"]["fingerprint"] for c in calls] == [
        c["payload"]["fingerprint"] for c in recorded_calls
    ]
    # the served calls are appended behind their answers, yet all before the command's end
    kinds = [e["kind"] for e in log]
    ended = max(i for i, e in enumerate(log) if e["kind"] == "agent.state")
    assert max(i for i, kind in enumerate(kinds) if kind == "llm.call") < ended
    result = _result(gateway, replay)
    assert result["matched"] is True
    assert (result["steps_recorded"], result["steps_served"], result["steps_matched"]) == (2, 2, 2)
    assert result["model_calls"] == 0
    verified = chronicle("verify", replay, env=gateway.env)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_changed_system_prompt_is_a_typed_divergence_and_stops_the_command(
    gateway: ServerProcess, upstream: FakeLlmServer, tmp_path: Path
) -> None:
    workspace = _workspace(tmp_path)
    recording = _recorded(
        gateway, upstream, workspace, "openai_agent.py", Reply(content="one"), Reply(content="two")
    )
    asked = len(upstream.requests)

    replayed = _run(
        gateway,
        workspace,
        "openai_agent.py",
        "--replay",
        recording,
        AGENT_SYSTEM="You answer in one word!",  # one byte changed
    )

    assert replayed.returncode == 3, replayed.stderr
    assert len(upstream.requests) == asked
    assert "diverged (request): model call 1: prompt message 0 (system) differs" in (
        replayed.stderr
    )
    assert "-You answer in one word." in replayed.stderr
    assert "+You answer in one word!" in replayed.stderr
    assert replayed.stdout == ""  # stopped at its first call
    result = _result(gateway, _replay_session(replayed))
    assert result["matched"] is False
    divergence = result["divergence"]
    assert (divergence["kind"], divergence["step"]) == ("request", 1)
    assert divergence["message"]["index"] == 0
    assert divergence["message"]["recorded_role"] == "system"
    assert result["steps_served"] == 0


def test_a_streaming_anthropic_agent_replays_and_its_divergence_is_reported(
    gateway: ServerProcess, upstream: FakeLlmServer, tmp_path: Path
) -> None:
    workspace = _workspace(tmp_path)
    recording = _recorded(
        gateway,
        upstream,
        workspace,
        "anthropic_agent.py",
        Reply(content="hello there", stream_pieces=["hel", "lo ", "there"]),
    )
    asked = len(upstream.requests)

    replayed = _run(gateway, workspace, "anthropic_agent.py", "--replay", recording)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == "hello there\n"
    served = [e for e in events(gateway, _replay_session(replayed)) if e["kind"] == "llm.call"]
    assert [call["payload"]["params"].get("stream") for call in served] == [True]

    changed = _run(
        gateway,
        workspace,
        "anthropic_agent.py",
        "--replay",
        recording,
        AGENT_SYSTEM="You answer in one word?",
    )
    assert changed.returncode == 3, changed.stderr
    assert "prompt message 0 (system) differs" in changed.stderr
    assert len(upstream.requests) == asked


def test_on_divergence_live_goes_on_with_the_model_from_the_divergence(
    gateway: ServerProcess, upstream: FakeLlmServer, tmp_path: Path
) -> None:
    workspace = _workspace(tmp_path)
    recording = _recorded(
        gateway, upstream, workspace, "openai_agent.py", Reply(content="one"), Reply(content="two")
    )
    asked = len(upstream.requests)
    upstream.script(Reply(content="live"))

    replayed = _run(
        gateway,
        workspace,
        "openai_agent.py",
        "--replay",
        recording,
        "--on-divergence",
        "live",
        AGENT_QUESTIONS="first?|another?",
        AGENT_STREAM="1",
    )

    assert replayed.returncode == 0, replayed.stderr  # the command's own exit code
    assert replayed.stdout == "one live\n"
    assert len(upstream.requests) == asked + 1  # only the call after the divergence
    assert "model call 2: prompt message 1 (user) differs" in replayed.stderr
    assert "went on live from the divergence: 1 model calls made" in replayed.stderr
    log = events(gateway, _replay_session(replayed))
    calls = [e["payload"] for e in log if e["kind"] == "llm.call"]
    assert calls[0]["replayed_from"] > 0 and "replayed_from" not in calls[1]
    assert calls[1]["response"]["content"] == "live"
    result = _result(gateway, _replay_session(replayed))
    assert (result["divergence"]["kind"], result["model_calls"]) == ("request", 1)


def test_recorded_calls_left_unasked_are_a_divergence(
    gateway: ServerProcess, upstream: FakeLlmServer, tmp_path: Path
) -> None:
    """And positional mode serves a changed request anyway, reporting the difference."""
    workspace = _workspace(tmp_path)
    recording = _recorded(
        gateway, upstream, workspace, "openai_agent.py", Reply(content="one"), Reply(content="two")
    )

    fewer = _run(
        gateway, workspace, "openai_agent.py", "--replay", recording, AGENT_QUESTIONS="first?"
    )
    assert fewer.returncode == 3, fewer.stderr
    assert "diverged (missing_call)" in fewer.stderr
    result = _result(gateway, _replay_session(fewer))
    assert (result["divergence"]["kind"], result["divergence"]["remaining"]) == (
        "missing_call",
        1,
    )

    positional = _run(
        gateway,
        workspace,
        "openai_agent.py",
        "--replay",
        recording,
        "--mode",
        "positional",
        AGENT_SYSTEM="Another prompt.",
    )
    assert positional.returncode == 3, positional.stderr
    assert positional.stdout == "one two\n"  # served anyway
    assert "request differs (reported, served anyway) at model calls 1, 2" in positional.stderr
    result = _result(gateway, _replay_session(positional))
    assert result["divergence"] is None and len(result["differences"]) == 2
    assert json.dumps(result["differences"][0]["message"]["recorded_role"]) == '"system"'


#: A fault at the store's door: the database refuses the llm.call of a served call (one whose
#: ``replayed_from`` is the given seq), in any replay session.
REFUSE_SERVED = """
CREATE FUNCTION test_refuse_served() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.kind = 'llm.call' AND NEW.payload->>'replayed_from' = TG_ARGV[0] THEN
    RAISE EXCEPTION 'test fault: served call refused';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER test_refuse_served BEFORE INSERT ON events
  FOR EACH ROW EXECUTE FUNCTION test_refuse_served({seq});
"""


def test_a_served_call_the_log_refused_fails_the_replay_loudly(
    gateway: ServerProcess, upstream: FakeLlmServer, tmp_path: Path
) -> None:
    """The last call's append fails after the agent got its answer and ended: the replay
    still fails (not 0, the reason said), and records no result."""
    workspace = _workspace(tmp_path)
    recording = _recorded(
        gateway, upstream, workspace, "openai_agent.py", Reply(content="one"), Reply(content="two")
    )
    last = [e for e in events(gateway, recording) if e["kind"] == "llm.call"][-1]["seq"]
    owner = gateway.env["CHRONICLE_OWNER_DATABASE_URL"]
    with psycopg.connect(owner, autocommit=True) as connection:
        connection.execute(REFUSE_SERVED.format(seq=int(last)))
    try:
        replayed = _run(gateway, workspace, "openai_agent.py", "--replay", recording)
    finally:
        with psycopg.connect(owner, autocommit=True) as connection:
            connection.execute("DROP TRIGGER test_refuse_served ON events")
            connection.execute("DROP FUNCTION test_refuse_served()")

    assert replayed.stdout == "one two\n"  # answered before the append failed
    assert replayed.returncode not in (0, 3), replayed.stderr
    assert "the replay failed" in replayed.stderr
    assert "the replay's log could not be written" in replayed.stderr
    # the refused call alone, or with the one before when both came within one append
    assert re.search(r"\b[12] calls? the gateway answered not recorded", replayed.stderr)
    log = events(gateway, _replay_session(replayed))
    assert "replay.result" not in [e["kind"] for e in log]
    assert [e["payload"]["state"] for e in log if e["kind"] == "agent.state"][-1] == "error"
