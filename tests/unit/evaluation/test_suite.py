"""Suites: a good one loads whole; every bad one is refused with one error naming the task
(by id, or by its place when it has none) and the field, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.evaluation.suite import ExpectedAnswer, SuiteError, load_suite, parse_suite

GOOD = """
name: smoke
tasks:
  - id: hello
    prompt: Make hello.py print "hello chronicle".
    files: {hello.py: "print('hi')\\n", "src/pkg/a.py": ""}
    check: python3 hello.py | grep -qx 'hello chronicle'
  - id: answer-me
    prompt: What is 6 x 7?
    answer: "regex:^\\\\s*42\\\\b"
    setup: echo ready
    limits: {max_iterations: 5, max_cost_usd: 0.5}
  - id: repo.task_2
    prompt: Fix the bug.
    repo: ../fixtures/repo
    commit: abc123
    setup: [make deps, make build]
"""


def test_a_good_suite_loads_every_field() -> None:
    suite = parse_suite(GOOD)
    assert suite.name == "smoke"
    assert [task.id for task in suite.tasks] == ["hello", "answer-me", "repo.task_2"]
    hello, answer, repo = suite.tasks
    assert hello.files == {"hello.py": "print('hi')\n", "src/pkg/a.py": ""}
    assert hello.check == "python3 hello.py | grep -qx 'hello chronicle'"
    assert hello.answer is None and hello.expected_answer is None
    assert answer.expected_answer == ExpectedAnswer(mode="regex", text=r"^\s*42\b")
    assert answer.setup == ["echo ready"]
    assert answer.limits.max_iterations == 5 and answer.limits.max_cost_usd == 0.5
    assert repo.repo == "../fixtures/repo" and repo.commit == "abc123"
    assert repo.setup == ["make deps", "make build"]
    assert suite.task("hello") is hello and suite.task("nope") is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("42", ExpectedAnswer(mode="exact", text="42")),
        ("regex:4+2", ExpectedAnswer(mode="regex", text="4+2")),
        ("contains:forty", ExpectedAnswer(mode="contains", text="forty")),
        ("Regex:x", ExpectedAnswer(mode="exact", text="Regex:x")),
    ],
)
def test_an_answer_says_how_it_compares(answer: str, expected: ExpectedAnswer) -> None:
    assert ExpectedAnswer.parse(answer) == expected


def refused(text: str) -> str:
    with pytest.raises(SuiteError) as caught:
        parse_suite(text, "bad.yaml")
    message = str(caught.value)
    assert message.startswith("suite bad.yaml is not valid")
    return message


def test_a_task_without_id_is_named_by_its_place() -> None:
    message = refused("name: s\ntasks:\n  - {id: a, prompt: x}\n  - {prompt: y}\n")
    assert "task #2, field 'id': Field required" in message


def test_duplicate_ids_name_the_id() -> None:
    message = refused("name: s\ntasks:\n  - {id: a, prompt: x}\n  - {id: a, prompt: y}\n")
    assert "field 'tasks': task id 'a' is used twice" in message


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../outside.py", "leaves the workspace"),
        ("src/../../outside.py", "leaves the workspace"),
        ("/etc/passwd", "is absolute"),
        ("~/.bashrc", "is absolute"),
        ("C:\\\\evil", "is absolute"),
        ("..\\\\evil", "leaves the workspace"),
        (".", "names the workspace itself"),
        ("", "non-empty relative path"),
    ],
)
def test_a_file_path_escaping_the_workspace_is_refused(path: str, why: str) -> None:
    message = refused(f'name: s\ntasks:\n  - id: esc\n    prompt: x\n    files: {{"{path}": hi}}\n')
    assert "task 'esc', field 'files'" in message
    assert why in message


def test_a_regex_answer_that_does_not_compile_is_refused() -> None:
    message = refused('name: s\ntasks:\n  - {id: r, prompt: x, answer: "regex:(unclosed"}\n')
    assert "task 'r', field 'answer': regex '(unclosed' does not compile" in message


def test_an_unknown_field_is_named_in_its_task_and_at_the_top() -> None:
    message = refused("name: s\ntasks:\n  - {id: t, prompt: x, chek: 'true'}\n")
    assert "task 't', field 'chek': is not a known field" in message
    message = refused("name: s\ntask: []\n")
    assert "field 'task': is not a known field" in message
    message = refused("name: s\ntasks:\n  - {id: t, prompt: x, limits: {max_steps: 3}}\n")
    assert "task 't', field 'limits.max_steps': is not a known field" in message


@pytest.mark.parametrize(
    ("task", "where"),
    [
        ("{id: t, prompt: 3}", "task 't', field 'prompt'"),
        ("{id: t, prompt: x, files: [a.py]}", "task 't', field 'files'"),
        ("{id: t, prompt: x, files: {a.py: 3}}", "task 't', field 'files.a.py'"),
        ("{id: t, prompt: x, limits: {max_iterations: many}}", "'limits.max_iterations'"),
        ("{id: t, prompt: x, limits: {max_iterations: 0}}", "'limits.max_iterations'"),
        ("{id: t, prompt: x, limits: {max_cost_usd: -1}}", "'limits.max_cost_usd'"),
        ("{id: t, prompt: x, setup: {a: b}}", "task 't', field 'setup'"),
        ("{id: t, prompt: x, check: [a]}", "task 't', field 'check'"),
        ("{id: 7, prompt: x}", "task #1, field 'id'"),
        ("{id: has space, prompt: x}", "task 'has space', field 'id'"),
        ("{id: t, prompt: ''}", "task 't', field 'prompt'"),
        ("{id: t, prompt: x, commit: abc}", "task 't': 'commit' needs a 'repo'"),
        ("just-a-string", "task #1: Input should be a valid dictionary"),
    ],
)
def test_wrong_types_name_the_task_and_field(task: str, where: str) -> None:
    assert where in refused(f"name: s\ntasks:\n  - {task}\n")


def test_every_problem_is_in_the_one_error() -> None:
    message = refused("name: s\ntasks:\n  - {id: a}\n  - {id: b, prompt: x, extra: 1}\n")
    assert "task 'a', field 'prompt': Field required" in message
    assert "task 'b', field 'extra': is not a known field" in message


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("name: s\ntasks: []\n", "field 'tasks': List should have at least 1 item"),
        ("name: s\n", "field 'tasks': Field required"),
        ("tasks:\n  - {id: a, prompt: x}\n", "field 'name': Field required"),
    ],
)
def test_a_suite_without_tasks_or_name_is_refused(text: str, why: str) -> None:
    assert why in refused(text)


def test_yaml_syntax_errors_give_the_line() -> None:
    with pytest.raises(SuiteError, match=r"is not valid YAML at line 3, column 23: .*'}'"):
        parse_suite("name: s\ntasks:\n  - {id: a, prompt: x}}\n", "bad.yaml")


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "just text\n"])
def test_a_suite_that_is_not_a_mapping_is_refused(text: str) -> None:
    with pytest.raises(SuiteError, match="must be a mapping with 'name' and 'tasks'"):
        parse_suite(text, "bad.yaml")


def test_loading_a_file(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(GOOD, encoding="utf-8")
    assert load_suite(path).name == "smoke"
    with pytest.raises(SuiteError, match="cannot read the suite"):
        load_suite(tmp_path / "missing.yaml")
    path.write_bytes(b"name: \xff\n")
    with pytest.raises(SuiteError, match="is not UTF-8 text"):
        load_suite(path)


def test_an_agent_command_is_the_suites_default_and_a_task_may_name_its_own() -> None:
    suite = parse_suite(
        """
name: outside
agent: {command: [python, agent.py, "{prompt}"], timeout: 60}
tasks:
  - {id: a, prompt: p}
  - {id: b, prompt: p, agent: {command: [aider, --yes]}}
  - {id: c, prompt: p, agent: null}
"""
    )
    a, b, c = suite.tasks
    assert a.agent is not None and a.agent.command == ["python", "agent.py", "{prompt}"]
    assert a.agent.timeout == 60
    assert b.agent is not None and (b.agent.command, b.agent.timeout) == (["aider", "--yes"], 1800)
    assert c.agent is None  # Chronicle's own agent


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        ("{command: []}", "field 'agent.command'"),
        ("{command: [agent], timeout: 0}", "field 'agent.timeout'"),
        ("{command: [agent], shell: true}", "field 'agent.shell': is not a known field"),
        ('{command: [" "]}', "the program) is empty"),
    ],
)
def test_a_bad_agent_command_is_refused_once_at_the_suite(agent: str, said: str) -> None:
    with pytest.raises(SuiteError) as refused:
        parse_suite(f"name: s\nagent: {agent}\ntasks:\n  - {{id: a, prompt: p}}\n")
    assert said in str(refused.value)
    assert "task 'a'" not in str(refused.value)  # not repeated for every task


def test_each_problem_says_its_line_when_the_suite_is_yaml() -> None:
    text = "name: s\ntasks:\n  - id: a\n    prompt: x\n    chek: 'true'\n  - {id: b}\n"
    with pytest.raises(SuiteError) as caught:
        parse_suite(text, "bad.yaml")
    assert [(p.line, p.where, p.message) for p in caught.value.problems] == [
        (5, "task 'a', field 'chek'", "is not a known field (check its spelling)"),
        (6, "task 'b', field 'prompt'", "Field required"),
    ]
    assert "line 5: task 'a', field 'chek': is not a known field" in str(caught.value)
    with pytest.raises(SuiteError) as caught:
        parse_suite("name: s\ntasks:\n  - {id: a, prompt: x}}\n", "bad.yaml")
    [problem] = caught.value.problems
    assert (problem.line, problem.column) == (3, 23)
    assert problem.message.startswith("not valid YAML: ")


def test_a_control_character_is_a_suite_problem_not_a_crash() -> None:
    """YAML's reader refuses a control character as it starts reading (the API answered 500
    to a suite of such text, found by the OpenAPI fuzz test)."""
    with pytest.raises(SuiteError, match="not valid YAML"):
        parse_suite("name: s\x12\ntasks: []\n")
