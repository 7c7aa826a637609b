"""Task suites: the YAML file of tasks an evaluation runs, validated at the boundary.

A suite is read once, before anything runs, so every mistake in it is found at once and
reported in one error naming the task (by id when it has one, else by its place) and the
field, instead of surfacing as a failed session halfway through a paid run.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

from app.errors import ChronicleError
from app.evaluation.answer_patterns import compile_problem

#: A task id names its sessions and its rows in reports: a short word, no spaces.
TASK_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
#: How an ``answer`` says it is not an exact string.
ANSWER_PREFIXES = ("regex:", "contains:")


class SuiteProblem(BaseModel):
    """One thing wrong with a suite: where (``task 'hello', field 'files'``; empty for the
    whole suite), the line and column of its YAML when it was read from YAML, and why."""

    model_config = ConfigDict(frozen=True)

    where: str
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        at = f"line {self.line}: " if self.line is not None else ""
        return f"{at}{self.where}: {self.message}" if self.where else f"{at}{self.message}"


class SuiteError(ChronicleError, ValueError):
    """A suite cannot be used; the message names the file, each bad task and field, and why
    (``problems``: the same, one by one, for a form to show beside its text)."""

    def __init__(self, message: str, problems: list[SuiteProblem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [SuiteProblem(where="", message=message)]


class Limits(BaseModel):
    """What one task's session may spend (the session's own limits, per task)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_iterations: PositiveInt | None = None
    max_cost_usd: PositiveFloat | None = None


class AgentCommand(BaseModel):
    """An agent Chronicle does not run, as a task names it: the command ``chronicle eval run``
    runs under ``chronicle record`` in the task's workspace (its model calls go through the
    gateway of a running ``chronicle serve``), stopped after ``timeout`` seconds. ``{prompt}``,
    ``{prompt_file}`` and ``{suite_dir}`` in an argument are replaced by the task's prompt,
    the path of a file holding it and the suite's directory (``external_agent.py``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: list[str] = Field(min_length=1)
    timeout: PositiveFloat = 1800.0

    @field_validator("command")
    @classmethod
    def _program_named(cls, command: list[str]) -> list[str]:
        if not command[0].strip():
            raise ValueError("the command's first item (the program) is empty")
        if any("\x00" in part for part in command):
            raise ValueError("the command holds a NUL character")
        return command


class ExpectedAnswer(BaseModel):
    """What the agent's finish message is compared with: the whole message (``exact``, after
    trimming surrounding whitespace), a regular expression searched in it, or a substring."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["exact", "regex", "contains"]
    text: str

    @classmethod
    def parse(cls, answer: str) -> ExpectedAnswer:
        """``regex:PATTERN``, ``contains:TEXT`` or an exact answer."""
        for prefix in ANSWER_PREFIXES:
            if answer.startswith(prefix):
                mode: Literal["regex", "contains"] = "regex" if prefix == "regex:" else "contains"
                return cls(mode=mode, text=answer[len(prefix) :])
        return cls(mode="exact", text=answer)


def _workspace_path(path: str) -> str:
    """A path that stays inside the workspace: relative, no ``..``, not empty."""
    if not path or "\x00" in path:
        raise ValueError("a file path must be a non-empty relative path")
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~") or re.match(r"^[A-Za-z]:[\\/]", path):
        raise ValueError(f"file path {path!r} is absolute; give it relative to the workspace")
    if ".." in pure.parts or ".." in path.split("\\"):
        raise ValueError(f"file path {path!r} leaves the workspace ('..')")
    if pure.parts in ((), (".",)):
        raise ValueError(f"file path {path!r} names the workspace itself, not a file")
    return path


class Task(BaseModel):
    """One task: the prompt, how its workspace is prepared, and how its result is judged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=TASK_ID)
    prompt: str = Field(min_length=1)
    #: path (relative to the workspace) -> content, written before the session starts
    files: dict[str, str] = Field(default_factory=dict)
    #: a local git repository cloned into the workspace, at ``commit`` (default: its HEAD)
    repo: str | None = None
    commit: str | None = None
    #: shell commands run in the workspace, in order, before the agent starts
    setup: list[str] = Field(default_factory=list)
    #: a shell command run in the final workspace: exit code 0 is a pass
    check: str | None = None
    #: the expected finish message: exact, or ``regex:`` / ``contains:`` prefixed
    answer: str | None = None
    limits: Limits = Field(default_factory=Limits)
    #: an outside agent's command instead of Chronicle's agent (default: the suite's ``agent``)
    agent: AgentCommand | None = None

    @field_validator("files")
    @classmethod
    def _files_stay_inside(cls, files: dict[str, str]) -> dict[str, str]:
        for path in files:
            _workspace_path(path)
        return files

    @field_validator("setup", mode="before")
    @classmethod
    def _one_command_is_a_list(cls, setup: Any) -> Any:
        return [setup] if isinstance(setup, str) else setup

    @field_validator("answer")
    @classmethod
    def _regex_compiles(cls, answer: str | None) -> str | None:
        if answer is not None:
            expected = ExpectedAnswer.parse(answer)
            problem = compile_problem(expected.text) if expected.mode == "regex" else None
            if problem is not None:
                raise ValueError(f"regex {expected.text!r} does not compile: {problem}")
        return answer

    @model_validator(mode="after")
    def _commit_needs_repo(self) -> Task:
        if self.commit is not None and self.repo is None:
            raise ValueError("'commit' needs a 'repo' to check it out from")
        return self

    @property
    def expected_answer(self) -> ExpectedAnswer | None:
        return None if self.answer is None else ExpectedAnswer.parse(self.answer)


class Suite(BaseModel):
    """A named list of tasks with distinct ids."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    tasks: list[Task] = Field(min_length=1)
    #: the agent command of every task that names none (None: Chronicle's agent)
    agent: AgentCommand | None = None

    @model_validator(mode="before")
    @classmethod
    def _tasks_take_the_suites_agent(cls, data: Any) -> Any:
        """Each task without an ``agent`` gets the suite's (``agent: null`` keeps Chronicle's),
        so a task, as its sessions record it, says whole what ran it. A suite ``agent`` that
        is not valid is left to its own field's error, not repeated in every task."""
        if not isinstance(data, dict) or data.get("agent") is None:
            return data
        try:
            AgentCommand.model_validate(data["agent"])
        except ValidationError:
            return data
        tasks = data.get("tasks")
        if isinstance(tasks, list):
            data = data | {
                "tasks": [
                    task | {"agent": data["agent"]}
                    if isinstance(task, dict) and "agent" not in task
                    else task
                    for task in tasks
                ]
            }
        return data

    @field_validator("tasks")
    @classmethod
    def _ids_are_distinct(cls, tasks: list[Task]) -> list[Task]:
        seen: set[str] = set()
        for task in tasks:
            if task.id in seen:
                raise ValueError(f"task id {task.id!r} is used twice; give each task its own id")
            seen.add(task.id)
        return tasks

    def task(self, task_id: str) -> Task | None:
        return next((task for task in self.tasks if task.id == task_id), None)


def _where(loc: tuple[int | str, ...], data: Any) -> str:
    """``task 'hello', field 'files'`` from a pydantic location, naming a task by its id."""
    if len(loc) >= 2 and loc[0] == "tasks" and isinstance(loc[1], int):
        index = loc[1]
        tasks = data.get("tasks") if isinstance(data, dict) else None
        raw = tasks[index] if isinstance(tasks, list) and index < len(tasks) else None
        task_id = raw.get("id") if isinstance(raw, dict) else None
        task = f"task {task_id!r}" if isinstance(task_id, str) else f"task #{index + 1}"
        field = ".".join(str(part) for part in loc[2:])
        return f"{task}, field {field!r}" if field else task
    return f"field {'.'.join(str(part) for part in loc)!r}"


def _node_at(root: yaml.Node | None, loc: tuple[int | str, ...]) -> yaml.Node | None:
    """The YAML node a pydantic location points at, or the deepest one found on the way (an
    unknown field's location ends at its key: the node found is its value, on its line)."""
    node = root
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            found = [
                value
                for key, value in node.value
                if isinstance(key, yaml.ScalarNode) and key.value == str(part)
            ]
            if not found:
                break
            node = found[0]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
        else:
            break
    return node


def _describe(source: str, exc: ValidationError, data: Any, root: yaml.Node | None) -> SuiteError:
    problems = []
    for error in exc.errors():
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "is not a known field (check its spelling)"
        loc = tuple(error["loc"])
        node = _node_at(root, loc)
        mark = node.start_mark if node is not None else None
        problems.append(
            SuiteProblem(
                where=_where(loc, data), message=message,
                line=mark.line + 1 if mark else None, column=mark.column + 1 if mark else None,
            )
        )  # fmt: skip
    return SuiteError(
        f"suite {source} is not valid: " + "; ".join(str(p) for p in problems), problems
    )


def parse_suite(text: str, source: str = "<suite>") -> Suite:
    """Validate a suite's YAML text; ``source`` names it in errors, each problem with the line
    it is on."""
    loader = None
    try:
        # the reader refuses a control character when it is made: inside the try too
        loader = yaml.SafeLoader(text)
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        said = SuiteProblem(
            where="", message=f"not valid YAML: {problem}", line=line, column=column
        )
        raise SuiteError(f"suite {source} is not valid YAML{where}: {problem}", [said]) from None
    finally:
        if loader is not None:
            loader.dispose()
    return _validated(data, source, root)


def suite_from_data(data: Any, source: str = "<suite>") -> Suite:
    """Validate a suite already parsed (the JSON of an API request); errors as ``parse_suite``."""
    return _validated(data, source, None)


def _validated(data: Any, source: str, root: yaml.Node | None) -> Suite:
    if not isinstance(data, dict):
        raise SuiteError(
            f"suite {source} must be a mapping with 'name' and 'tasks', not {type(data).__name__}"
        )
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        raise _describe(source, exc, data, root) from None


def load_suite(path: Path) -> Suite:
    """Read and validate a suite file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"cannot read the suite {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SuiteError(f"the suite {path} is not UTF-8 text") from None
    return parse_suite(text, str(path))
