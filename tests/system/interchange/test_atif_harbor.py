"""ATIF against Harbor, the tool that defines it (harbor 0.26.0 in .venv-harbor: needs Python
3.12, so it runs as a program of its own). Harbor's own converters write real trajectories —
Claude Code's from a session log, mini-swe-agent's from its trajectory, both made up here —
which `chronicle import --from atif` reads and `chronicle export --format atif` gives back
equal; Harbor's validator accepts every trajectory Chronicle writes, its own sessions' too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli import chronicle, cli_environment, demo_session
from tests.support.venvs import installed_venv

#: Runs in .venv-harbor: writes Harbor's trajectories of two made-up runs into argv[1].
CONVERT = r"""
import json, sys
from pathlib import Path
from harbor.agents.installed.claude_code import ClaudeCode
from harbor.agents.installed.mini_swe_agent import convert_mini_swe_agent_to_atif
from harbor.utils.trajectory_utils import format_trajectory_json

out = Path(sys.argv[1])
session = "5e55a0b1-0000-4000-8000-00000000c0de"
common = {"sessionId": session, "version": "2.1.0", "cwd": "/repo", "gitBranch": "main",
          "userType": "external", "isSidechain": False}
entries = []

def entry(kind, at, message, **more):
    entries.append({**common, "type": kind, "uuid": f"e{len(entries)}",
                    "parentUuid": f"e{len(entries) - 1}" if entries else None,
                    "timestamp": at, "message": message, **more})

def usage(fresh, read, out_tokens):
    return {"input_tokens": fresh, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": read, "output_tokens": out_tokens}

model = "claude-sonnet-4-5-20250929"
entry("user", "2026-02-01T09:00:00.000Z",
      {"role": "user", "content": "How many lines has setup.py?"})
entry("assistant", "2026-02-01T09:00:03.000Z", {
    "id": "msg_a", "model": model, "role": "assistant", "type": "message",
    "content": [{"type": "thinking", "thinking": "wc will say."},
                {"type": "text", "text": "Counting."},
                {"type": "tool_use", "id": "toolu_a", "name": "Bash",
                 "input": {"command": "wc -l setup.py", "description": "count lines"}},
                {"type": "tool_use", "id": "toolu_b", "name": "Read",
                 "input": {"file_path": "/repo/missing.py"}}],
    "stop_reason": "tool_use", "usage": usage(40, 2000, 55)}, requestId="req_a")
entry("user", "2026-02-01T09:00:04.000Z", {"role": "user", "content": [
    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "42 setup.py",
     "is_error": False}]},
    toolUseResult={"stdout": "42 setup.py", "stderr": "", "interrupted": False, "isImage": False})
entry("user", "2026-02-01T09:00:05.000Z", {"role": "user", "content": [
    {"type": "tool_result", "tool_use_id": "toolu_b", "content": "File does not exist.",
     "is_error": True}]}, toolUseResult="Error: File does not exist.")
entry("assistant", "2026-02-01T09:00:07.000Z", {
    "id": "msg_b", "model": model, "role": "assistant", "type": "message",
    "content": [{"type": "text", "text": "setup.py has 42 lines \u00e9\u00e8."}],
    "stop_reason": "end_turn", "usage": usage(12, 2100, 14)})
folder = out / "claude" / "sessions" / "projects" / "-repo"
folder.mkdir(parents=True)
(folder / f"{session}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
claude = ClaudeCode(logs_dir=out / "claude", model_name=f"anthropic/{model}")
trajectory = claude.convert_trajectory(out / "claude")
(out / "claude-code.json").write_text(format_trajectory_json(trajectory.to_json_dict()))

def call(call_id, command):
    return {"id": call_id, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}

mini = {"trajectory_format": "mini-swe-agent-1.1",
        "info": {"mini_version": "2.1.0", "model_stats": {"instance_cost": 0.003, "api_calls": 2},
                 "config": {"model": {"model_name": "openai/gpt-5-mini"},
                            "agent": {"step_limit": 20}}},
        "messages": [
    {"role": "system", "content": "You run shell commands.", "extra": {"timestamp": 1769936400.0}},
    {"role": "user", "content": "Print the date.", "extra": {"timestamp": 1769936401.0}},
    {"role": "assistant", "content": "Running date and uname.",
     "tool_calls": [call("c1", "date"), call("c2", "uname")],
     "extra": {"timestamp": 1769936403.0, "response": {"usage": {
         "prompt_tokens": 300, "completion_tokens": 20,
         "prompt_tokens_details": {"cached_tokens": 128},
         "completion_tokens_details": {"reasoning_tokens": 8}}}}},
    {"role": "tool", "tool_call_id": "c1",
     "content": "<returncode>0</returncode>\n<output>Sun</output>",
     "extra": {"timestamp": 1769936404.0}},
    {"role": "tool", "tool_call_id": "c2",
     "content": "<returncode>0</returncode>\n<output>Linux</output>",
     "extra": {"timestamp": 1769936404.5}},
    {"role": "assistant", "content": "",
     "tool_calls": [call("c3", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")],
     "extra": {"timestamp": 1769936406.0,
               "response": {"usage": {"prompt_tokens": 400, "completion_tokens": 9}}}},
    {"role": "tool", "tool_call_id": "c3", "content": "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
     "extra": {"timestamp": 1769936407.0}},
    {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}}]}
trajectory = convert_mini_swe_agent_to_atif(mini, session_id="mini-run-7")
(out / "mini-swe-agent.json").write_text(format_trajectory_json(trajectory.to_json_dict()))
"""

#: Runs in .venv-harbor: Harbor's validator on each file named; prints {file: [errors]}.
VALIDATE = r"""
import json, sys
from harbor.utils.trajectory_validator import TrajectoryValidator
found = {}
for name in sys.argv[1:]:
    validator = TrajectoryValidator()
    validator.validate(name, validate_images=False)
    found[name] = validator.errors
print(json.dumps(found))
"""


def harbor(python: Path, program: str, *args: str) -> str:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("PYTHONPATH", None)  # Harbor's own packages, not Chronicle's
    done = subprocess.run(
        [str(python), "-c", program, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_harbors_trajectories_import_and_export_equal_and_ours_validate(
    tmp_path: Path, app_database_url: str
) -> None:
    python = installed_venv("harbor") / "bin" / "python"
    work = tmp_path / "harbor"
    work.mkdir()
    harbor(python, CONVERT, str(work))
    env = cli_environment(app_database_url, tmp_path)

    ours: list[str] = []
    for name in ("claude-code.json", "mini-swe-agent.json"):
        original = json.loads((work / name).read_text())
        assert original["schema_version"] == "ATIF-v1.7"
        loaded = chronicle("import", "--from", "atif", str(work / name), env=env)
        assert loaded.returncode == 0, loaded.stderr
        session = loaded.stdout.split()[0]
        again = chronicle("import", "--from", "atif", str(work / name), env=env)
        assert "already imported" in again.stdout
        back = tmp_path / f"chronicle-{name}"
        out = chronicle("export", "--format", "atif", session, "-o", str(back), env=env)
        assert out.returncode == 0, out.stderr
        assert json.loads(back.read_text()) == original, name
        ours.append(str(back))

        events = chronicle("events", session, "--json", env=env)
        kinds = [json.loads(line)["kind"] for line in events.stdout.splitlines()]
        assert kinds.count("llm.call") == 2 and "run" in kinds and "run.output" in kinds

    native = tmp_path / "chronicle-demo.json"
    out = chronicle("export", "--format", "atif", demo_session(env), "-o", str(native), env=env)
    assert out.returncode == 0, out.stderr
    ours.append(str(native))

    errors = json.loads(harbor(python, VALIDATE, *ours))
    assert errors == {name: [] for name in ours}


if __name__ == "__main__":  # pragma: no cover - a way to look at Harbor's files by hand
    harbor(Path(sys.argv[1]), CONVERT, sys.argv[2])
