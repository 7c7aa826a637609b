"""`chronicle eval score` as a user runs it, on a session recorded with a real sandbox and the
fake model server, after that server is gone: the scores printed and appended, a scorer of
one's own by module and name, --json, and the errors for what cannot be used."""

from __future__ import annotations

import json
from pathlib import Path

from app.evaluation.scoring import latest_scores
from app.store import EventStore
from tests.support.cli import chronicle, cli_environment
from tests.support.fake_llm import FakeLlmServer
from tests.support.recordings import record

MY_SCORER = """
from app.evaluation.scoring import Score


class SaysHello:
    name = "says_hello"
    version = 2

    def score(self, session):
        said = session.finish_message or ""
        return Score.verdict("hello" in said, f"finish said {said!r}")
"""


async def test_scoring_a_recorded_session_without_the_model(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    session = await record(store, fake_llm, tmp_path)
    fake_llm.stop()  # scoring must not need the model
    recorded_calls = len(fake_llm.requests)
    env = cli_environment(app_database_url, tmp_path)

    scored = chronicle("eval", "score", str(session), "--answer", "regex:prints hello$", env=env)
    assert scored.returncode == 0, scored.stderr
    lines = scored.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(f"{session}  finished  pass     the agent called finish")
    assert lines[1] == (
        f"{session}  answer    pass     the finish message 'hello.py prints hello' "
        "matches the regex 'prints hello$'"
    )
    assert lines[2].startswith(f"{session}  cost      ")
    assert lines[3] == f"{session}  steps     5        5 actions over 5 model calls"

    events = await store.read(session)
    latest = latest_scores(events)
    assert sorted(latest) == [("answer", 1), ("cost", 1), ("finished", 1), ("steps", 1)]
    assert latest[("steps", 1)].payload["score_value"] == 5.0
    assert latest[("finished", 1)].payload["scored_seq"] < latest[("finished", 1)].seq
    assert len(fake_llm.requests) == recorded_calls

    (tmp_path / "my_scorers.py").write_text(MY_SCORER)
    mine = chronicle(
        "eval", "score", str(session), "--scorer", "my_scorers:SaysHello", "--scorer",
        "finished", "--json",
        env={**env, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert mine.returncode == 0, mine.stderr
    result = json.loads(mine.stdout)
    assert result["session_id"] == str(session) and result["error"] is None
    assert result["scores"]["says_hello"] == {
        "value": 1.0,
        "label": "pass",
        "explanation": "finish said 'hello.py prints hello'",
    }
    assert set(result["scores"]) == {"says_hello", "finished"}
    latest = latest_scores(await store.read(session))
    assert latest[("says_hello", 2)].payload["score_label"] == "pass"


async def test_what_cannot_be_used_is_said(
    store: EventStore, tmp_path: Path, app_database_url: str
) -> None:
    env = cli_environment(app_database_url, tmp_path)
    unknown = chronicle("eval", "score", "nightly", "--scorer", "nope", env=env)
    assert unknown.returncode == 2
    assert "error: no scorer named 'nope'; the built-in scorers are" in unknown.stderr

    regex = chronicle("eval", "score", "nightly", "--answer", "regex:(", env=env)
    assert regex.returncode == 2
    assert "error: --answer 'regex:(' cannot be used: regex '(' does not compile" in regex.stderr

    suite = tmp_path / "suite.yaml"
    suite.write_text("name: s\ntasks:\n  - {id: a}\n")
    bad = chronicle("eval", "score", "nightly", "--suite", str(suite), env=env)
    assert bad.returncode == 2
    assert f"error: suite {suite} is not valid: line 3: task 'a', field 'prompt'" in bad.stderr

    missing = chronicle("eval", "score", "nightly", env=env)
    assert missing.returncode == 1
    assert "error: no evaluation run is named 'nightly'" in missing.stderr
    assert "Traceback" not in missing.stderr
