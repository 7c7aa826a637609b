"""``chronicle record --replay`` of a recording redacted after it was recorded: a real
``chronicle serve``, an agent on the official ``openai`` SDK recorded against the fake model,
a recorded answer and then a prompt message redacted with ``EventStore.redact``. The gateway
serves the calls before the redacted one, refuses that one in the protocol's error shape
(HTTP 422, code ``replay_redacted``), in either mode, and the replay records the typed
``redacted`` divergence ``chronicle replay`` records."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.external.replay_serving import DIVERGED, REDACTED_CODE
from app.store import EventStore
from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply
from tests.support.postgres import PgServer
from tests.support.record_gateway import USER, events, fake_model, recording_server, session_of

REASON = "a customer's name in the answer"
PROMPT_REASON = "a key pasted in the question"

#: An agent on the openai SDK: one call a question, each answer printed as it comes; a
#: refused call printed (status, code, the message) and the agent ends. It lets the SIGTERM
#: of a stopped replay pass, so that what it was told is printed whatever comes first.
AGENT = textwrap.dedent(
    """
    import os
    import signal
    import sys
    from openai import APIStatusError, OpenAI

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    client = OpenAI()
    for question in ("first?", "second?", "third?"):
        messages = [
            {"role": "system", "content": "You answer in one word."},
            {"role": "user", "content": question},
        ]
        try:
            if os.environ.get("AGENT_STREAM") == "1":
                stream = client.chat.completions.create(
                    model="scripted", messages=messages, stream=True
                )
                answer = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            else:
                reply = client.chat.completions.create(model="scripted", messages=messages)
                answer = reply.choices[0].message.content
        except APIStatusError as exc:
            print(f"refused {exc.status_code} {exc.code}: {exc.body['message']}", flush=True)
            sys.exit(1)
        print(answer, flush=True)
    """
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
    root = tmp_path_factory.mktemp("redacted-replay")
    yield from recording_server(pg_server, pg_template, root, upstream)


def _run(gateway: ServerProcess, workspace: Path, *options: str, **environment: str) -> Any:
    common = ["--user", USER, "--url", gateway.url, "--workspace", str(workspace)]
    return chronicle(
        "record",
        *common,
        *options,
        "--",
        sys.executable,
        "agent.py",
        env={**gateway.env, **environment},
        timeout=120,
    )


def _replayed(gateway: ServerProcess, session: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The replay session's llm.call payloads and its replay.result."""
    log = events(gateway, session)
    assert log[-1]["kind"] == "replay.result", [e["kind"] for e in log]
    calls = [e["payload"] for e in log if e["kind"] == "llm.call"]
    assert "[redacted]" not in json.dumps(calls)  # no placeholder served as recorded
    return calls, log[-1]["payload"]


async def test_a_redacted_call_stops_the_gateway_replay_after_serving_the_calls_before(
    gateway: ServerProcess, upstream: FakeLlmServer, tmp_path: Path, settings: Settings
) -> None:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "agent.py").write_text(AGENT)
    upstream.replies.clear()
    upstream.script(Reply(content="one"), Reply(content="two"), Reply(content="three"))
    recorded = _run(gateway, workspace)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == "one\ntwo\nthree\n"
    recording = session_of(recorded)
    asked = len(upstream.requests)
    calls = [e for e in events(gateway, recording) if e["kind"] == "llm.call"]
    assert len(calls) == 3
    first, second, third = (call["seq"] for call in calls)

    async with await EventStore.open(
        gateway.env["CHRONICLE_DATABASE_URL"], masker=settings.masker()
    ) as store:
        await store.redact(recording, third, "/response/content", reason=REASON, user=USER)

        # 1. The third answer was redacted: the first two are served, the third refused.
        replayed = _run(gateway, workspace, "--replay", recording)

        summary = (
            f"model call 3 cannot be served: seq {third} /response/content was redacted ({REASON})"
        )
        lines = replayed.stdout.splitlines()
        assert lines[:2] == ["one", "two"], replayed.stdout  # served as recorded
        assert lines[2].startswith(
            f"refused 422 {REDACTED_CODE}: chronicle record --replay: {summary}; "
        ), replayed.stdout
        assert len(lines) == 3
        assert replayed.returncode == 3, replayed.stderr
        assert f"diverged (redacted): {summary}" in replayed.stderr
        assert f"  redacted: seq {third} /response/content: {REASON}" in replayed.stderr
        assert "(--on-divergence live)" in replayed.stderr
        assert len(upstream.requests) == asked  # no model called
        replay = session_of(replayed)
        served, result = _replayed(gateway, replay)
        assert [call.get("replayed_from") for call in served] == [first, second, None]
        assert served[2]["error_kind"] == DIVERGED and summary in served[2]["error"]
        divergence = result["divergence"]
        assert divergence == {
            "kind": "redacted",
            "step": 3,
            "recorded_seq": third,
            "parts": [{"seq": third, "path": "/response/content", "reason": REASON}],
            "summary": summary,
        }
        assert (result["matched"], result["steps_served"], result["steps_matched"]) == (
            False,
            2,
            2,
        )
        verified = chronicle("verify", replay, env=gateway.env)
        assert verified.returncode == 0, verified.stdout + verified.stderr

        # 2. The second question was redacted from its call's prompt (its message goes with
        # it): a positional, streamed replay stops there too, and keeps no prompt of it.
        prompt = (await store.read(recording, after_seq=second - 1, limit=1))[0].payload["prompt"]
        stored = await store.read_messages(prompt)
        index = next(i for i, key in enumerate(prompt) if stored[key]["content"] == "second?")
        path = f"/prompt/{index}"
        await store.redact(recording, second, path, reason=PROMPT_REASON, user=USER)

        again = _run(
            gateway, workspace, "--replay", recording, "--mode", "positional", AGENT_STREAM="1"
        )

    summary = f"model call 2 cannot be served: seq {second} {path} was redacted ({PROMPT_REASON})"
    lines = again.stdout.splitlines()
    assert lines[0] == "one" and len(lines) == 2, again.stdout
    assert lines[1].startswith(f"refused 422 {REDACTED_CODE}: chronicle record --replay: {summary}")
    assert again.returncode == 3, again.stderr
    assert f"diverged (redacted): {summary}" in again.stderr
    assert len(upstream.requests) == asked
    served, result = _replayed(gateway, session_of(again))
    assert [call.get("replayed_from") for call in served] == [first, None]
    refused = served[1]
    assert refused["error_kind"] == DIVERGED
    assert (refused["prompt"], refused.get("prompt_kept"), refused.get("tools")) == ([], None, None)
    assert result["divergence"]["kind"] == "redacted"
    assert (result["divergence"]["step"], result["divergence"]["recorded_seq"]) == (2, second)
    assert result["divergence"]["parts"] == [{"seq": second, "path": path, "reason": PROMPT_REASON}]
    assert (result["mode"], result["steps_served"]) == ("positional", 1)
