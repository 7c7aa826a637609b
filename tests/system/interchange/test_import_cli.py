"""`chronicle import --from FORMAT FILE` as a user runs it: each format imported, imported
again without a change, listed, shown, verified and replayed (zero model calls) by the other
commands; a bad file refused in one line, without a traceback."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.support.cli import chronicle, cli_environment
from tests.support.foreign_recordings import (
    CTF_FLAG,
    REAL_RECORDINGS,
    SWE_AGENT_CTF,
    as_bytes,
    as_json_lines,
    openhands_chat,
    openhands_events,
    openhands_output_line,
    swe_agent_trajectory,
)


def imported_ids(stdout: str) -> list[uuid.UUID]:
    return [uuid.UUID(line.split()[0]) for line in stdout.splitlines()]


def test_each_format_is_imported_once_and_usable_by_every_command(
    tmp_path: Path, app_database_url: str
) -> None:
    env = cli_environment(app_database_url, tmp_path)
    traj = tmp_path / "calc-1.traj"
    traj.write_bytes(as_bytes(swe_agent_trajectory()))
    output = tmp_path / "output.jsonl"
    lines = [openhands_output_line("calc-1", openhands_events()), openhands_output_line(
        "chat-2", openhands_chat()
    )]  # fmt: skip
    output.write_bytes(as_json_lines(lines))

    first = chronicle("import", "--from", "swe-agent", str(traj), env=env)
    assert first.returncode == 0, first.stderr
    [swe] = imported_ids(first.stdout)
    assert first.stdout == f"{swe}  imported: 23 events, 7 model calls  swe-agent: calc-1\n"
    again = chronicle("import", "--from", "swe-agent", str(traj), env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout.replace("imported:", "already imported:")

    both = chronicle("import", "--from", "openhands", str(output), env=env)
    assert both.returncode == 0, both.stderr
    calc, chat = imported_ids(both.stdout)
    assert (
        "imported: 21 events, 5 model calls  openhands: calc-1: Fix add() in calc.py" in both.stdout
    )

    listed = chronicle("sessions", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in map(json.loads, listed.stdout.splitlines())}
    assert rows[str(swe)]["state"] == "finished"
    assert rows[str(calc)]["state"] == "finished"

    shown = chronicle("events", str(calc), env=env)
    assert shown.returncode == 0, shown.stderr
    assert "imported" in shown.stdout and "browser" in shown.stdout

    for session in (swe, calc, chat):
        verified = chronicle("verify", str(session), env=env)
        assert verified.returncode == 0, verified.stdout + verified.stderr

    replayed = chronicle("replay", str(chat), "--mode", "positional", "--json", env=env)
    result = json.loads(replayed.stdout)
    assert (result["model_calls"], result["divergence"]) == (0, None), replayed.stderr
    assert result["outcome"] == result["recorded_outcome"] == "finished"

    diverged = chronicle("replay", str(swe), "--mode", "positional", "--json", env=env)
    assert diverged.returncode != 0
    result = json.loads(diverged.stdout)
    assert result["model_calls"] == 0
    assert result["divergence"]["kind"] == "missing_call" and result["divergence"]["step"] == 5


def test_a_bad_recording_is_refused_in_one_line(tmp_path: Path, app_database_url: str) -> None:
    env = cli_environment(app_database_url, tmp_path)
    broken = tmp_path / "run.json"
    events = openhands_events()
    events[12]["args"] = "forgotten 4..9"
    broken.write_bytes(as_bytes(events))
    refused = chronicle("import", "--from", "openhands", str(broken), env=env)
    assert refused.returncode == 1
    assert refused.stderr == (
        "error: run.json, item 12, field 'args': must be an object, not a string\n"
    )
    assert refused.stdout == ""

    wrong = tmp_path / "calc.traj"
    wrong.write_bytes(as_bytes(openhands_events()))
    refused = chronicle("import", "--from", "swe-agent", str(wrong), env=env)
    assert refused.returncode == 1
    assert refused.stderr == (
        "error: calc.traj: is not a SWE-agent trajectory: expected a JSON object\n"
    )

    unknown = chronicle("import", "--from", "aider", str(wrong), env=env)
    assert unknown.returncode == 2 and "invalid choice: 'aider'" in unknown.stderr
    assert "Traceback" not in refused.stderr + unknown.stderr


def test_a_scored_flag_passes_imports_again_and_an_untold_recording_is_refused(
    tmp_path: Path, app_database_url: str
) -> None:
    """SWE-agent's CTF trajectory scored against its flag, then imported again after the
    scores were appended; a trajectory without the user's message refused by `chronicle
    replay` at once (it waited for ever; the integration tests check nothing is recorded)."""
    env = cli_environment(app_database_url, tmp_path)
    ctf = str(REAL_RECORDINGS / SWE_AGENT_CTF)
    first = chronicle("import", "--from", "swe-agent", ctf, env=env)
    assert first.returncode == 0, first.stderr
    [session] = imported_ids(first.stdout)
    scored = chronicle("eval", "score", str(session), "--answer", CTF_FLAG, env=env)
    assert scored.returncode == 0, scored.stderr
    assert f"{session}  answer    pass" in scored.stdout
    again = chronicle("import", "--from", "swe-agent", ctf, env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout.replace("imported:", "already imported:")

    untold = tmp_path / "no-task.json"
    untold.write_bytes(as_bytes([e for e in openhands_events() if e.get("source") != "user"]))
    imported = chronicle("import", "--from", "openhands", str(untold), env=env)
    assert imported.returncode == 0, imported.stderr
    [agent_only] = imported_ids(imported.stdout)
    refused = chronicle("replay", str(agent_only), env=env, timeout=30)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith(f"error: session {agent_only} cannot be replayed: ")
    assert "before any message from the user" in refused.stderr
