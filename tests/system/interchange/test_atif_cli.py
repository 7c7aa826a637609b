"""`chronicle export --format atif` and `chronicle import --from atif` as a user runs them:
a recorded session out and back in and out again the same, another agent's trajectory in
and out as it was, imported once; bad combinations and bad files refused in one line."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.support.cli import chronicle, cli_environment, demo_session
from tests.support.foreign_recordings import as_bytes, openhands_events


def test_a_session_goes_out_in_and_out_the_same(tmp_path: Path, app_database_url: str) -> None:
    env = cli_environment(app_database_url, tmp_path)
    recorded = tmp_path / "openhands.json"
    recorded.write_bytes(as_bytes(openhands_events()))
    loaded = chronicle("import", "--from", "openhands", str(recorded), env=env)
    assert loaded.returncode == 0, loaded.stderr
    for session in (demo_session(env), loaded.stdout.split()[0]):
        first = tmp_path / f"{session}.atif.json"
        out = chronicle("export", "--format", "atif", session, "-o", str(first), env=env)
        assert out.returncode == 0, out.stderr
        assert f"exported {session} as ATIF-v1.7" in out.stderr
        document = json.loads(first.read_text())
        assert document["session_id"] == session
        assert [step["source"] for step in document["steps"]].count("agent") >= 1

        back = chronicle("import", "--from", "atif", str(first), env=env)
        assert back.returncode == 0, back.stderr
        copy = back.stdout.split()[0]
        assert copy != session
        again = chronicle("export", "--format", "atif", copy, env=env)  # to stdout
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout) == document

        verified = chronicle("verify", copy, env=env)
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_trajectory_is_imported_once(tmp_path: Path, app_database_url: str) -> None:
    env = cli_environment(app_database_url, tmp_path)
    document = {
        "schema_version": "ATIF-v1.5",
        "session_id": "s-1",
        "agent": {"name": "other", "version": "2", "model_name": "m", "extra": {"k": [1.5]}},
        "steps": [
            {"step_id": 1, "source": "user", "message": "list files"},
            {
                "step_id": 2,
                "timestamp": "2026-01-05T10:00:02Z",
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {"tool_call_id": "c", "function_name": "Bash", "arguments": {"command": "ls"}}
                ],
                "observation": {"results": [{"source_call_id": "c", "content": "a\nb\n"}]},
                "metrics": {"prompt_tokens": 5, "completion_tokens": 1, "cost_usd": 0.5},
            },
        ],
    }
    path = tmp_path / "other.json"
    path.write_text(json.dumps(document))
    first = chronicle("import", "--from", "atif", str(path), env=env)
    assert first.returncode == 0, first.stderr
    session = first.stdout.split()[0]
    uuid.UUID(session)
    assert "imported: 6 events, 1 model calls  atif: other: list files" in first.stdout
    again = chronicle("import", "--from", "atif", str(path), env=env)
    assert again.stdout == first.stdout.replace("imported:", "already imported:")

    events = chronicle("events", session, "--json", env=env)
    assert events.returncode == 0, events.stderr
    kinds = [json.loads(line)["kind"] for line in events.stdout.splitlines()]
    assert kinds == ["session.created", "message", "llm.call", "run", "run.output", "agent.state"]
    out = chronicle("export", "--format", "atif", session, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == document


def test_bad_combinations_and_files_are_refused_in_a_line(
    tmp_path: Path, app_database_url: str
) -> None:
    env = cli_environment(app_database_url, tmp_path)
    one, two = str(uuid.uuid4()), str(uuid.uuid4())
    for args, code, said in [
        (("--format", "atif"), 2, "writes one SESSION (an ATIF file is one trajectory; 0"),
        (
            ("--format", "atif", one, two),
            2,
            "writes one SESSION (an ATIF file is one trajectory; 2",
        ),
        (("--format", "atif", "--view", "session_costs"), 2, "not a --view"),
        (("--format", "atif", one), 1, f"error: no session {one}"),
    ]:
        result = chronicle("export", *args, env=env)
        assert result.returncode == code, (args, result.stderr)
        assert said in result.stderr and "Traceback" not in result.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"agent": {"name": "a"}, "steps": [{"step_id": 1}]}))
    result = chronicle("import", "--from", "atif", str(bad), env=env)
    assert result.returncode == 1
    assert result.stderr == (
        "error: bad.json, field 'agent.version': is not ATIF: Field required "
        "(and 2 more problems)\n"
    )
