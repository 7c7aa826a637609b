"""`chronicle replay` as a user runs it: exit 0 on a match, 3 on a divergence, the divergence
in words or as JSON, the overrides from options and from a file."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from app.store import EventStore
from tests.support.cli import chronicle, cli_environment
from tests.support.fake_llm import FakeLlmServer
from tests.support.recordings import record


async def test_replay_from_the_command_line(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    session = await record(store, fake_llm, tmp_path)
    fake_llm.stop()
    env = cli_environment(app_database_url, tmp_path)

    # No model client at all: litellm cannot even be imported by this replay.
    blocker = tmp_path / "no-model-client" / "litellm"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('a replay must not import litellm')\n")
    same = chronicle("replay", str(session), env={**env, "PYTHONPATH": str(blocker.parent)})
    assert same.returncode == 0, same.stderr
    assert "5 of 5 model calls matched, 5 served, 0 made" in same.stdout
    assert "matched: ended finished as recorded" in same.stdout

    prompt = tmp_path / "prompt.txt"
    prompt.write_text("You are a terse agent.\nWorkspace: {workspace}\n")
    changed = chronicle("replay", str(session), "--system-prompt", str(prompt), env=env)
    assert changed.returncode == 3, changed.stderr
    assert "diverged (request): model call 1: prompt message 0 (system) differs" in changed.stdout
    assert "    -You are Chronicle's coding agent." in changed.stdout
    assert "    +You are a terse agent." in changed.stdout

    as_json = chronicle(
        "replay",
        str(session),
        "--system-prompt",
        str(prompt),
        "--mode",
        "positional",
        "--json",
        env=env,
    )
    assert as_json.returncode == 3, as_json.stderr
    result = json.loads(as_json.stdout)
    assert result["divergence"] is None and result["outcome"] == "finished"
    assert [d["message"]["index"] for d in result["differences"]] == [0, 0, 0, 0, 0]
    assert result["model_calls"] == 0 and result["replay_of"] == str(session)

    config = tmp_path / "agent.toml"
    config.write_text('tools = ["execute_bash", "think", "finish"]\n')
    fewer = chronicle("replay", str(session), "--agent-config", str(config), "--json", env=env)
    assert fewer.returncode == 3, fewer.stderr
    divergence = json.loads(fewer.stdout)["divergence"]
    assert divergence["kind"] == "request" and divergence["tools"]["removed"] == [
        "str_replace_editor"
    ]
    limited = chronicle("replay", str(session), "--max-iterations", "2", env=env)
    assert limited.returncode == 3 and "diverged (missing_call)" in limited.stdout
    warm = chronicle("replay", str(session), "--model-param", "temperature=0.5", env=env)
    assert warm.returncode == 3 and "temperature: recorded 0, replay 0.5" in warm.stdout

    shell = chronicle("replay", str(session), "--agent", "shell-only", "--json", env=env)
    assert shell.returncode == 3, shell.stderr
    divergence = json.loads(shell.stdout)["divergence"]
    assert divergence["kind"] == "request" and divergence["message"]["index"] == 0
    assert divergence["tools"]["removed"] == ["str_replace_editor", "think"]
    nosuch = chronicle("replay", str(session), "--agent", "nosuch", env=env)
    assert nosuch.returncode == 2
    assert "no agent 'nosuch'; the registered agents are: codeact, shell-only" in nosuch.stderr

    listed = chronicle("sessions", env=env)
    assert listed.returncode == 0 and str(same.stdout.split()[1]) in listed.stdout


async def test_what_cannot_be_replayed_says_why(app_database_url: str, tmp_path: Path) -> None:
    env = cli_environment(app_database_url, tmp_path)
    missing = chronicle("replay", str(uuid.uuid4()), env=env)
    assert missing.returncode == 1 and "error: there is no session" in missing.stderr
    bad = chronicle("replay", str(uuid.uuid4()), "--model-param", "temperature", env=env)
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr
    unreadable = chronicle(
        "replay", str(uuid.uuid4()), "--system-prompt", str(tmp_path / "nope.txt"), env=env
    )
    assert unreadable.returncode == 2 and "cannot read the system prompt" in unreadable.stderr
    broken = tmp_path / "agent.toml"
    broken.write_text("tools = [\n")
    invalid = chronicle("replay", str(uuid.uuid4()), "--agent-config", str(broken), env=env)
    assert invalid.returncode == 2 and "is not valid TOML" in invalid.stderr
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"max_iterations": "many"}')
    refused = chronicle("replay", str(uuid.uuid4()), "--agent-config", str(wrong), env=env)
    assert refused.returncode == 2 and "max_iterations" in refused.stderr
