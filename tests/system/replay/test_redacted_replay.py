"""A replay of a session whose model call was redacted after it was recorded: it serves the
calls before it, stops there with a ``redacted`` divergence saying what went and why, and
`chronicle replay` says so (exit 3). Recorded with a real local sandbox and litellm against
the fake model server, redacted with ``EventStore.redact``."""

from __future__ import annotations

import json
from pathlib import Path

from app.replay import RedactedDivergence, RedactedPart, replay
from app.store import EventStore
from tests.support.cli import chronicle, cli_environment
from tests.support.fake_llm import FakeLlmServer
from tests.support.recordings import record

REASON = "a customer's name in the reply"


async def test_a_redacted_reply_stops_the_replay_at_its_step_after_serving_the_ones_before(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    session = await record(store, fake_llm, tmp_path)
    fake_llm.stop()
    recorded = await store.read(session)
    calls = [e.seq for e in recorded if e.kind == "llm.call"]
    assert len(calls) == 5
    third = calls[2]  # "Division by zero; fixing it." and the edit that fixes it
    await store.redact(session, third, "/response/content", reason=REASON, user="alice")

    for mode in ("strict", "positional"):
        result = await replay(store, session, mode=mode)  # type: ignore[arg-type]

        divergence = result.divergence
        assert isinstance(divergence, RedactedDivergence), (mode, divergence)
        assert (divergence.step, divergence.recorded_seq) == (3, third)
        assert divergence.parts == [
            RedactedPart(seq=third, path="/response/content", reason=REASON)
        ]
        assert divergence.summary == (
            f"model call 3 cannot be served: seq {third} /response/content was redacted ({REASON})"
        )
        assert not result.matched and result.model_calls == 0
        # The two calls before it were served as recorded, and what they led to matched.
        assert (result.steps_recorded, result.steps_served, result.steps_matched) == (5, 2, 2)
        replayed = await store.read(result.session_id)
        served = [e.payload["replayed_from"] for e in replayed if e.kind == "llm.call"]
        assert served == calls[:2]
        outputs = [e.payload["output"] for e in replayed if e.kind == "run.output"]
        assert len(outputs) == 1 and "ZeroDivisionError" in outputs[0]
        assert "[redacted]" not in json.dumps([e.payload for e in replayed[:-1]])
        stopped = [e for e in replayed if e.kind == "agent.state"][-1]
        assert stopped.payload["state"] == "stopped"
        assert divergence.summary in stopped.payload["reason"]
        last = replayed[-1]
        assert last.kind == "replay.result" and last.payload["divergence"]["kind"] == "redacted"
        assert last.payload["divergence"]["parts"][0]["reason"] == REASON
        assert (await store.verify(result.session_id)).ok

    env = cli_environment(app_database_url, tmp_path)
    shown = chronicle("replay", str(session), env=env)
    assert shown.returncode == 3, shown.stderr
    assert "2 of 5 model calls matched, 2 served, 0 made" in shown.stdout
    assert (
        f"diverged (redacted): model call 3 cannot be served: seq {third} /response/content "
        f"was redacted ({REASON})"
    ) in shown.stdout
    assert f"  redacted: seq {third} /response/content: {REASON}" in shown.stdout
