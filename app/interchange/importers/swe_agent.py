"""SWE-agent trajectories (``.traj`` files) as Chronicle sessions.

What is read (SWE-agent's ``sweagent/agent/agents.py``: ``get_trajectory_data`` writes
``trajectory``, ``history``, ``info``, ``replay_config`` and ``environment``;
``sweagent/types.py``: ``TrajectoryStep``, ``HistoryItem``, ``AgentInfo``):

- **The file** is one JSON object. ``trajectory`` (a list, required) holds the steps;
  a retry loop's file (``RetryAgent``) also has ``attempts``, each an object of the same keys:
  with a top-level ``trajectory`` (the chosen attempt, copied there) that one is imported and
  the number of attempts kept in the config, without one every attempt is a session;
  ``history`` (optional) the messages as the model saw them; ``info`` (optional) how the run
  ended — ``exit_status``, ``submission``, ``model_stats`` (``instance_cost``, ``tokens_sent``,
  ``tokens_received``, ``api_calls``: totals, kept in the session's config) and
  ``swe_agent_version``; the file's name (SWE-agent names it after the instance) is the
  session's title; ``replay_config`` (the run's configuration, JSON text or an object) for
  the model's name (``agent.model.name``); ``environment`` its name. Other keys are ignored.
- **A step** (an object; its position is the ``ImportOrigin.index``): ``query`` is the
  messages sent to the model (each one's ``role``, ``content``, ``tool_calls``, ``name`` and —
  from ``tool_call_ids`` — ``tool_call_id`` are kept, SWE-agent's own keys such as
  ``agent``, ``message_type`` and ``is_demo`` are not); ``response`` the model's raw output
  (the model call's text, verbatim); ``thought`` the part of it before the action (read only
  for steps no model made); ``action`` the command SWE-agent ran; ``observation`` what it
  printed. ``state``, ``execution_time`` and ``extra_info`` are not read. A step is a model
  call when its ``query`` holds a message (older trajectories have no ``query``: then when it
  has a ``response``); SWE-agent's own steps (an autosubmission after an error, whose ``query``
  is ``[{}]``) are ``imported`` actions from the ``system``, with no model call.
- **The action.** The history's assistant messages (``message_type`` ``action``, not
  ``is_demo``) are matched to the model's steps in order by their ``action``; a matched
  message's ``tool_calls`` (``id``, ``function.name``, ``function.arguments``) say which tool
  the model called (the first one: SWE-agent runs one per step). ``bash`` is ``execute_bash``
  of its ``command``; ``str_replace_editor`` is ``str_replace_editor`` with its arguments
  (``command``, ``path``, ``file_text``, ``old_str``, ``new_str``, ``insert_line``,
  ``view_range``); ``submit`` is ``finish``, whose message is what was submitted: the
  argument's text (a tool call's, else the command's words after ``submit`` as the shell reads
  them: ``submit 'FLAG'``, a CTF's answer, is ``FLAG``; ``-f``/``--force``, which only skips
  a review, is no text), else empty (a plain ``submit`` sends the repository's diff, which is
  its observation); a tool named ``exit...`` is an ``imported``
  action; any other tool is ``execute_bash`` of the step's ``action`` (SWE-agent's tools are
  commands in its shell: that line is what ran). Without tool calls the ``action`` text says
  it the same way: ``submit``, ``str_replace_editor COMMAND PATH --flag VALUE ...`` (read as
  shell words), ``exit_*``, else a shell command. An empty action (the model's output could
  not be parsed) is no action: the model's reply is the agent's ``message``.
- **Observations** answer the step's action: a command's is ``run.output`` (SWE-agent
  records no exit code: none), a file action's ``file.edit.output``, a submit's (the patch)
  and an imported action's ``imported.output``.
- **The ending** is ``info.exit_status``: ``submitted`` is ``finished``; one that mentions
  ``exit_cost`` is ``stopped`` at the cost limit (a ``limit``); another ``submitted (...)`` (an
  autosubmission after an error) is ``stopped``; any other is ``error``; without one, the
  last step says (``finished`` after a submit, else ``stopped``).
- **Cost.** SWE-agent records tokens and cost per run, not per call: each model call is
  unpriced and counts no tokens; ``info.model_stats`` is in the session's config.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from pydantic import ValidationError

from app.events import (
    Event,
    FileEditOutput,
    ImportedAction,
    ImportedOutput,
    Message,
    RunOutput,
)
from app.interchange.importers.model import (
    ImportedSession,
    ImportProblem,
    SessionBuilder,
    ToolUse,
    refused,
)
from app.interchange.importers.values import (
    first_line,
    integer,
    json_object,
    load_json,
    mapping,
    text_of,
)

FORMAT = "swe-agent"
EDITOR_ARGUMENTS = (
    "command",
    "path",
    "file_text",
    "old_str",
    "new_str",
    "insert_line",
    "view_range",
)
MESSAGE_KEYS = ("role", "content", "tool_calls", "name", "tool_call_id")


def import_swe_agent(file: str, data: bytes) -> list[ImportedSession]:
    """The session of a ``.traj`` file, or one per attempt of a retry loop's file that
    chose none (see the module); ``ImportProblem`` names what is wrong with it."""
    document = load_json(file, data)
    if not isinstance(document, dict):
        raise ImportProblem(file, "is not a SWE-agent trajectory: expected a JSON object")
    attempts = document.get("attempts")
    if document.get("trajectory") is None and isinstance(attempts, list) and attempts:
        sessions = []
        for number, attempt in enumerate(attempts):
            if not isinstance(attempt, dict):
                raise ImportProblem(file, "must be an object", field=f"attempts[{number}]")
            sessions.append(_session(file, data, attempt, number, {}))
        return sessions
    # A retry loop's chosen attempt is the file's own trajectory.
    counted = {"attempts": len(attempts)} if isinstance(attempts, list) else {}
    return [_session(file, data, document, None, counted)]


def _session(
    file: str,
    data: bytes,
    document: dict[str, Any],
    attempt: int | None,
    about: dict[str, Any],
) -> ImportedSession:
    def problem(message: str, field: str) -> ImportProblem:
        return ImportProblem(file, message, attempt=attempt, field=field)

    steps = document.get("trajectory")
    if not isinstance(steps, list):
        found = "missing" if steps is None else "not a list"
        raise problem(f"is {found}: a SWE-agent trajectory holds its steps there", "trajectory")
    history = document.get("history")
    if history is not None and not isinstance(history, list):
        raise problem("must be a list of messages", "history")
    info = document.get("info")
    if info is not None and not isinstance(info, dict):
        raise problem("must be an object", "info")
    builder = SessionBuilder(FORMAT, file, data, attempt=attempt)
    reader = _Reader(builder, document, history or [], info or {})
    for index, step in enumerate(steps):
        try:
            reader.step(index, step)
        except ValidationError as exc:
            raise refused(reader.b, index, exc) from None
    reader.end()
    return reader.session(about)


class _Reader:
    def __init__(
        self,
        builder: SessionBuilder,
        document: dict[str, Any],
        history: list[Any],
        info: dict[str, Any],
    ) -> None:
        self.b = builder
        self.info = info
        self.environment = text_of(document.get("environment"))
        self.model = _model_name(document.get("replay_config")) or "unknown"
        self.actions = [
            message
            for message in history
            if isinstance(message, dict)
            and message.get("role") == "assistant"
            and message.get("message_type") == "action"
            and not message.get("is_demo")
        ]
        self.task = next(
            (
                text_of(message.get("content"))
                for message in history
                if isinstance(message, dict)
                and message.get("role") == "user"
                and not message.get("is_demo")
            ),
            "",
        )
        self.told = False
        self.last_done = ""

    def problem(self, message: str, index: int, field: str | None = None) -> ImportProblem:
        return ImportProblem(self.b.file, message, attempt=self.b.attempt, index=index, field=field)

    def step(self, index: int, step: Any) -> None:
        if not isinstance(step, dict):
            raise self.problem("is not a trajectory step (an object)", index)
        for field in ("action", "observation", "response", "thought"):
            value = step.get(field)
            if value is not None and not isinstance(value, str):
                raise self.problem(f"must be text, not {type(value).__name__}", index, field)
        query = step.get("query")
        if query is not None and not isinstance(query, list):
            raise self.problem("must be a list of messages", index, "query")
        prompt = [_message(m) for m in query or [] if isinstance(m, dict) and m]
        if not self.told:
            self.tell(index, prompt)
        action = step.get("action") or ""
        response = step.get("response") or ""
        observation = step.get("observation") or ""
        made_by_model = bool(prompt) if query is not None else bool(response)
        if not made_by_model:
            self.own_step(index, step, action, observation)
            return
        use = self.use(index, action)
        call = self.b.model_call(
            self.b.origin(index, field="response"),
            model=self.model,
            content=response,
            uses=[use] if use is not None else [],
            prompt=prompt,
        )
        if use is None:
            self.b.add(
                Message(content=response, source="agent", cause=call),
                self.b.origin(index, field="response"),
            )
            self.last_done = "message"
            if observation:
                self.b.add(
                    ImportedOutput(observation="observation", content=observation),
                    self.b.origin(index, field="observation"),
                )
            return
        action_event = self.b.action(use, thought=response, cause=call)
        seq = self.b.add(action_event, self.b.origin(index, field="action"))
        self.last_done = "finish" if action_event.kind == "finish" else "action"
        answer = self.answer(action_event, observation)
        if answer is not None:
            self.b.add(
                answer.model_copy(update={"cause": seq}), self.b.origin(index, field="observation")
            )

    def tell(self, index: int, prompt: list[dict[str, Any]]) -> None:
        """The task, as the user's message, before the first step."""
        self.told = True
        if not self.task:
            self.task = next(
                (text_of(m.get("content")) for m in prompt if m.get("role") == "user"), ""
            )
        origin = self.b.origin(None, field="history")
        self.b.add(Message(content=self.task or "(the recording holds no task message)"), origin)

    def own_step(self, index: int, step: dict[str, Any], action: str, observation: str) -> None:
        """A step SWE-agent took by itself (no model call)."""
        name = action.split(maxsplit=1)[0] if action.strip() else "step"
        seq = self.b.add(
            ImportedAction(
                tool=name,
                arguments={"action": action},
                thought=text_of(step.get("thought")) or text_of(step.get("response")),
                source="system",
            ),
            self.b.origin(index, field="action"),
        )
        if observation:
            self.b.add(
                ImportedOutput(observation="observation", content=observation, cause=seq),
                self.b.origin(index, field="observation"),
            )

    def use(self, index: int, action: str) -> ToolUse | None:
        """The tool the model called in this step, if any."""
        message = self.matching(action)
        calls = message.get("tool_calls") if message else None
        call = (
            calls[0] if isinstance(calls, list) and calls and isinstance(calls[0], dict) else None
        )
        call_id = text_of(call.get("id")) if call else ""
        call_id = call_id or f"swe-agent-{index}"
        if call is not None:
            function = mapping(call.get("function"))
            name = text_of(function.get("name"))
            arguments = json_object(function.get("arguments"))
            return _tool_use(call_id, name, arguments, action)
        if not action.strip():
            return None
        word = action.split(maxsplit=1)[0]
        if word == "submit":
            return _tool_use(call_id, "submit", {}, action)  # its text: ``_submitted``
        if word == "str_replace_editor":
            editor = _editor_arguments(action)
            if editor is not None:
                return _tool_use(call_id, word, editor, action)
        if word.startswith("exit"):
            return _tool_use(call_id, word, {"action": action}, action)
        return _tool_use(call_id, "bash", {"command": action}, action)

    def matching(self, action: str) -> dict[str, Any] | None:
        """The next history message of the model's that ran ``action``."""
        for position, message in enumerate(self.actions):
            if message.get("action") == action:
                del self.actions[: position + 1]
                return message
        return None

    @staticmethod
    def answer(action: Event, observation: str) -> Event | None:
        if action.kind == "run":
            return RunOutput(output=observation)
        if action.kind == "file.edit":
            return FileEditOutput(path=str(getattr(action, "path", "")), content=observation)
        if not observation:
            return None
        kind = "submission" if action.kind == "finish" else "observation"
        return ImportedOutput(observation=kind, content=observation)

    def end(self) -> None:
        status = text_of(self.info.get("exit_status"))
        origin = self.b.origin(None, field="end")
        if status == "submitted":
            self.b.state("finished", "submitted", origin)
        elif "exit_cost" in status:
            self.b.state(
                "stopped", f"reached the cost limit (SWE-agent: {status})", origin, limit="cost"
            )
        elif status.startswith("submitted"):
            self.b.state("stopped", f"SWE-agent: {status}", origin)
        elif status:
            self.b.state("error", f"SWE-agent: {status}", origin)
        elif self.last_done == "finish":
            self.b.state("finished", "the agent submitted", origin)
        elif self.last_done == "message":
            self.b.state("awaiting_user_input", "the agent answered without an action", origin)
        else:
            self.b.state("stopped", "the recording ends here, without a submit", origin)

    def session(self, about: dict[str, Any]) -> ImportedSession:
        """The session, ``about`` added to what its config says of the recording."""
        if not self.told:
            self.tell(0, [])
        imported: dict[str, Any] = dict(about)
        for key in ("exit_status", "submission", "model_stats", "swe_agent_version"):
            if self.info.get(key) is not None:
                imported[key] = self.info[key]
        if self.environment:
            imported["environment"] = self.environment
        # SWE-agent names a trajectory after its instance (django__django-11099.traj).
        title = self.b.file.removesuffix(".traj") or first_line(self.task)
        if self.b.attempt is not None:
            title = f"{title} (attempt {self.b.attempt})"
        return self.b.build(
            title=f"swe-agent: {title}",
            config={"agent": FORMAT, "model": self.model, "imported": imported},
        )


def _message(message: dict[str, Any]) -> dict[str, Any]:
    """A query message as the model was sent it (SWE-agent's own keys left out)."""
    sent = {key: message[key] for key in MESSAGE_KEYS if message.get(key) is not None}
    ids = message.get("tool_call_ids")
    if "tool_call_id" not in sent and isinstance(ids, list) and ids:
        sent["tool_call_id"] = ids[0]
    return sent


def _model_name(replay_config: Any) -> str:
    if isinstance(replay_config, str):
        try:
            replay_config = json.loads(replay_config)
        except (json.JSONDecodeError, RecursionError):
            return ""
    model = mapping(mapping(mapping(replay_config).get("agent")).get("model"))
    return text_of(model.get("name"))


def _tool_use(call_id: str, name: str, arguments: dict[str, Any], action: str) -> ToolUse:
    tool: str | None
    tool_arguments: dict[str, Any] | None
    if name == "bash":
        tool, tool_arguments = "execute_bash", {"command": text_of(arguments.get("command"))}
    elif name == "str_replace_editor":
        tool = name
        tool_arguments = {k: arguments[k] for k in EDITOR_ARGUMENTS if arguments.get(k) is not None}
    elif name == "submit":
        tool, tool_arguments = "finish", {"message": _submitted(arguments, action)}
    elif name.startswith("exit"):
        tool, tool_arguments = None, None
    else:
        tool, tool_arguments = "execute_bash", {"command": action}
    return ToolUse(
        call_id=call_id,
        name=name,
        arguments=arguments,
        tool=tool,
        tool_arguments=tool_arguments,
    )


def _submitted(arguments: dict[str, Any], action: str) -> str:
    """What a ``submit`` sent (see the module): a tool call's text argument, else the words
    after ``submit`` joined as its ``echo "$@"`` does; empty for a plain or forced submit."""
    texts = [value for value in arguments.values() if isinstance(value, str) and value]
    if texts:
        return texts[0]
    try:
        words = shlex.split(action)
    except ValueError:  # unbalanced quotes: the shell refuses it too; keep the text as written
        words = action.split()
    return " ".join(word for word in words[1:] if word not in ("-f", "--force"))


def _editor_arguments(action: str) -> dict[str, Any] | None:
    """``str_replace_editor COMMAND PATH [--flag VALUE]...`` as arguments, or None."""
    try:
        words = shlex.split(action)
    except ValueError:
        return None
    if len(words) < 3 or words[0] != "str_replace_editor":
        return None
    arguments: dict[str, Any] = {"command": words[1], "path": words[2]}
    rest = words[3:]
    if len(rest) % 2:
        return None
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        key = flag.removeprefix("--")
        if not flag.startswith("--") or key not in EDITOR_ARGUMENTS:
            return None
        if key == "insert_line":
            arguments[key] = integer(value) if integer(value) is not None else value
        elif key == "view_range":
            arguments[key] = json_object(f'{{"v": {value}}}').get("v", value)
        else:
            arguments[key] = value
    return arguments
