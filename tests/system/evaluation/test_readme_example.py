"""The worked example of docs/evaluation.md, run verbatim so it cannot rot: its suite file
(the ```yaml block after ``<!-- example-file: NAME -->``) is written as it reads, and each
transcript (the ```console blocks after ``<!-- example-transcript -->``) is replayed: every
``$ chronicle ...`` line runs as written, its exit status must be the one the transcript says
(``[exit N]``, else 0), and every output line shown must appear in the real output, in that
order (``…`` stands for what differs between runs: session ids, times).

The model is the scripted OpenAI-compatible server, priced as a configured model would be;
what it answers is written here, in the order the example's sessions ask."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from tests.support.agent_cli import agent_environment
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.forked import chronicle_run

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "evaluation.md"
FILE = re.compile(r"<!-- example-file: (?P<name>[\w.]+) -->\n```\w*\n(?P<text>.*?)```", re.S)
TRANSCRIPT = re.compile(r"<!-- example-transcript -->\n```console\n(?P<text>.*?)```", re.S)
EXIT = re.compile(r"^\[exit (\d+)\]$")


def reply(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[tool_call(name, **arguments)], prompt_tokens=1000,
                 completion_tokens=200)  # fmt: skip


# baseline: hello fixed, a wrong answer, a loop; tuned: hello not fixed, the right answer.
SCRIPT = [
    reply("execute_bash", command="echo \"print('hello chronicle')\" > hello.py"),
    reply("finish", message="hello.py prints hello chronicle"),
    reply("finish", message="41"),
    reply("execute_bash", command="ls"),
    reply("execute_bash", command="ls -a"),
    reply("finish", message="done"),
    reply("finish", message="42"),
    reply("execute_bash", command="ls"),
    reply("execute_bash", command="ls -a"),
]  # fmt: skip


def transcripts(text: str) -> list[tuple[str, int, list[str]]]:
    """(command, exit status, output lines shown) of each ``$`` line, in order."""
    steps: list[tuple[str, int, list[str]]] = []
    for block in TRANSCRIPT.finditer(text):
        for line in block["text"].splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], 0, []))
            elif (code := EXIT.match(line)) is not None:
                steps[-1] = (steps[-1][0], int(code[1]), steps[-1][2])
            elif line.strip():
                steps[-1][2].append(line)
    return steps


def pattern(shown: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in shown.split("…")))


def assert_shown(shown: list[str], output: str, command: str) -> None:
    lines = output.splitlines()
    at = 0
    for expected in shown:
        wanted = pattern(expected)
        while at < len(lines) and wanted.fullmatch(lines[at]) is None:
            at += 1
        assert at < len(lines), f"`{command}` did not print {expected!r}:\n{output}"
        at += 1


def test_the_worked_example_runs_as_written(
    fake_llm: FakeLlmServer, tmp_path: Path, app_database_url: str
) -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    files = {match["name"]: match["text"] for match in FILE.finditer(guide)}
    assert set(files) == {"smoke.yaml", "terse.txt"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    steps = transcripts(guide)
    assert [command.split()[:3] for command, _, _ in steps] == [
        ["chronicle", "eval", "run"], ["chronicle", "eval", "report"],
        ["chronicle", "eval", "run"], ["chronicle", "eval", "compare"],
        ["chronicle", "eval", "replay"], ["chronicle", "eval", "replay"],
        ["chronicle", "eval", "compare"],
    ]  # fmt: skip
    fake_llm.script(*SCRIPT)
    env = agent_environment(fake_llm, app_database_url, tmp_path,
                            CHRONICLE_LLM_INPUT_COST_PER_TOKEN="0.000001",
                            CHRONICLE_LLM_OUTPUT_COST_PER_TOKEN="0.000005")  # fmt: skip
    for command, status, shown in steps:
        if command.split()[2] == "replay":
            fake_llm.stop()  # replays call no model: the server is gone
        argv = shlex.split(command)
        done = chronicle_run(
            argv[1:], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == status, f"`{command}`:\n{done.stdout}\n{done.stderr}"
        assert_shown(shown, done.stdout, command)
    assert len(fake_llm.requests) == len(SCRIPT)
