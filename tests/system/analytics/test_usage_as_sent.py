"""A session whose model sends 10^15 tokens, ``1e999``, ``"abc"``, reasoning text and cache
counts, run by `chronicle run` as a user runs it, then replayed, queried and exported.

Before: the replies with ``1e999`` and ``"abc"`` were thrown away as "not a chat completion"
(their commands never ran), the reasoning text and the cache and reasoning counts were
dropped, and the 10^15 tokens made `llm_calls`, `session_costs`, `daily_usage` and `chronicle
export --view` fail for every session of the database.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from pathlib import Path

from app.events import LlmCall, SessionCreated
from app.store import EventStore
from tests.support.agent_cli import agent_environment
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

HUGE = 10**15


def _echo(word: str) -> list[dict[str, object]]:
    return [tool_call("execute_bash", command=f"echo {word}")]


async def test_odd_usage_keeps_the_session_and_every_view_answers(
    store: EventStore, fake_llm: FakeLlmServer, app_database_url: str,
    analyst_database_url: str, tmp_path: Path,
) -> None:  # fmt: skip
    fake_llm.script(
        Reply(tool_calls=_echo("one"), prompt_tokens=HUGE, completion_tokens=30,
              cached_tokens=40, cache_creation_tokens=7, reasoning_tokens=11,
              reasoning_content="Start by echoing one."),
        Reply(tool_calls=_echo("two"),
              usage_json='{"prompt_tokens": 1e999, "completion_tokens": 5, "total_tokens": 1e999}'),
        Reply(tool_calls=_echo("three"),
              usage_json='{"prompt_tokens": "abc", "completion_tokens": 6, "total_tokens": "abc"}'),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )  # fmt: skip
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = agent_environment(fake_llm, app_database_url, tmp_path) | {
        "CHRONICLE_ANALYST_DATABASE_URL": analyst_database_url
    }
    other = uuid.uuid4()  # another session of the database: its rows must answer too
    await store.append(other, [SessionCreated(title="other"), LlmCall(model="m", fingerprint="f")],
                       expected_seq=0)  # fmt: skip
    session = str(uuid.uuid4())
    done = chronicle("run", "--workspace", str(workspace), "--session", session,
                     "Echo three words.", env=env, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Pydantic" not in done.stderr  # litellm's warnings about the odd counts

    events = await store.read(uuid.UUID(session))
    outputs = [e.payload["output"].strip() for e in events if e.kind == "run.output"]
    assert outputs == ["one", "two", "three"]  # every reply was used
    assert events[-2].payload["state"] == "finished"
    calls = [e.payload for e in events if e.kind == "llm.call"]
    assert [c["error"] for c in calls] == [None] * 4
    assert calls[0]["response"]["reasoning_content"] == "Start by echoing one."
    assert [c["usage"]["prompt_tokens"] for c in calls] == [HUGE, None, None, 100]

    replayed = chronicle("replay", session, "--json", env=env, timeout=300)
    result = json.loads(replayed.stdout)
    assert result["matched"] and result["model_calls"] == 0, replayed.stderr
    served = [e.payload for e in await store.read(uuid.UUID(result["session_id"]))
              if e.kind == "llm.call"]  # fmt: skip
    assert [c["response"] for c in served] == [c["response"] for c in calls]
    assert [c["usage"] for c in served] == [c["usage"] for c in calls]

    query = ('SELECT gen_ai_usage_input_tokens, "gen_ai.usage.cache_read.input_tokens", '
             '"gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.reasoning.output_tokens", '
             '"gen_ai.response.id" IS NOT NULL AS has_id, usage_unknown, has_reasoning, replayed, '
             "(SELECT sum(gen_ai_usage_input_tokens) FROM daily_usage) AS day "
             f"FROM llm_calls WHERE session_id = '{session}' ORDER BY seq")  # fmt: skip
    listed = chronicle("sql", "--json", query, env=env)
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [list(row.values()) for row in rows] == [
        [HUGE, 40, 7, 11, True, False, True, False, HUGE + 100],
        [None, 0, None, None, True, True, False, False, HUGE + 100],
        [None, 0, None, None, True, True, False, False, HUGE + 100],
        [100, 0, None, None, True, False, False, False, HUGE + 100],
    ]  # daily_usage: the replay's served calls are not spend

    costs = chronicle("export", "--view", "session_costs", env=env)
    assert costs.returncode == 0, costs.stderr
    by_session = {row["session_id"]: row for row in csv.DictReader(io.StringIO(costs.stdout))}
    assert set(by_session) >= {session, str(other)}
    mine = by_session[session]
    assert (mine["llm_calls"], mine["gen_ai_usage_input_tokens"]) == ("4", str(HUGE + 100))
    assert (mine["unknown_usage_calls"], mine["gen_ai.usage.reasoning.output_tokens"]) == (
        "2",
        "11",
    )
    assert mine["replayed_llm_calls"] == "0"  # the replay is a session of its own
