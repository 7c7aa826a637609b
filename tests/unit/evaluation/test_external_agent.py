"""How an evaluation task reaches an agent command: ``{prompt}`` and ``{prompt_file}`` in its
arguments, and the task's variables in its environment."""

from __future__ import annotations

from pathlib import Path

from app.evaluation.external_agent import command_line, task_environment
from app.evaluation.suite import AgentCommand, Task


def test_placeholders_are_replaced_in_each_argument_and_other_braces_are_left() -> None:
    agent = AgentCommand(
        command=["{suite_dir}/agent", "--task={prompt}", "--file", "{prompt_file}", "{x} {0}",
                 "{prompt"]
    )  # fmt: skip
    prompt = 'Fix {it}: "x" {prompt_file} {suite_dir}'
    assert command_line(agent, prompt, Path("/runs/t/epoch-1.prompt"), Path("/suites")) == [
        "/suites/agent",
        '--task=Fix {it}: "x" {prompt_file} {suite_dir}',  # the prompt's text is not read
        "--file",
        "/runs/t/epoch-1.prompt",
        "{x} {0}",
        "{prompt",
    ]


def test_the_task_is_in_the_environment() -> None:
    task = Task(id="sum", prompt="What is 6 x 7?")
    assert task_environment(task, 2, Path("/runs/sum/epoch-2.prompt")) == {
        "CHRONICLE_TASK_ID": "sum",
        "CHRONICLE_TASK_EPOCH": "2",
        "CHRONICLE_TASK_PROMPT": "What is 6 x 7?",
        "CHRONICLE_TASK_PROMPT_FILE": "/runs/sum/epoch-2.prompt",
    }
