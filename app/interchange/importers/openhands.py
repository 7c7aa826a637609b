"""OpenHands recordings: a list of serialized events, as Chronicle sessions (what single
fields say is in ``openhands_fields.py``).

What is read (OpenHands' ``openhands/events/serialization/event.py``, ``event_to_dict`` /
``event_to_trajectory``):

- **The file.** A JSON list of events, as ``save_trajectory_path`` writes it
  (``controller.get_trajectory()``: the agent's history) — one session. Or an evaluation's
  ``output.jsonl``: one JSON object per line (``EvalOutput``) whose ``history`` is that list
  (or, in old outputs, a list of ``[action, observation]`` pairs, flattened) — one session per
  line; a single such object as a JSON file is one session too. Of an ``EvalOutput``:
  ``instance_id`` (the title; a resolver's output names its ``issue``: ``owner/repo#number``),
  ``metrics`` and ``error`` (kept in the session's config; ``error`` is how the session ended
  when the history does not say).
- **Flat events.** Older outputs (the resolver's ``output.jsonl`` before 0.20, OpenHands' own
  ``tests/unit/resolver/mock_output/output.jsonl``) hold each event as
  ``dataclasses.asdict(event)``: the arguments (or an observation's extras) beside ``action``
  (``observation``), and no ``id``, ``source`` or ``cause``. They are read as the nested form.
  A message without a ``source`` is the user's when it opens the recording or answers the
  agent's message, else the agent's; an observation without ``id`` and ``cause`` answers the
  latest action not answered yet (such histories list each action's answer right after it).
- **An event** is an object with ``action`` (an action type) or ``observation`` (an
  observation type); anything else is refused. ``id`` (its number in the stream: the
  ``ImportOrigin.id``), ``source`` (``user``, ``agent``, ``environment``; missing: agent,
  but see flat events; an observation is the environment's whatever it says, as Chronicle's
  controller expects),
  ``cause`` (an observation's action's ``id``),
  ``timeout`` (a command's hard timeout), ``tool_call_metadata`` (``function_name``,
  ``tool_call_id``, ``model_response``: the litellm ``ModelResponse`` the action came from,
  of which ``id``, ``model``, ``choices[0].message.content``, ``choices[0].finish_reason`` and
  ``usage`` — ``prompt_tokens``, ``completion_tokens``, ``total_tokens``,
  ``prompt_tokens_details.cached_tokens`` — are read) and ``llm_metrics`` (of which
  ``accumulated_cost``, the session's cost so far, and ``response_latencies``, the seconds each
  response took by ``response_id``) are read; ``message`` and ``timestamp`` are
  not (the event's time is when it was imported; the origin says where it came from).
- **Actions** (``args``): ``message`` (``content``) from the user is a ``message``; from the
  agent it is a model call whose reply is that text, and the agent's ``message``. ``system``
  (``content``, ``tools``, ``agent_class``, ``openhands_version``) goes into the session's
  config (the tools are also the tool list of every model call). ``null`` is left out. An
  action the model asked for — one with ``tool_call_metadata``, or of a type only a model
  produces — is a model call (one per ``model_response.id``: several actions of one response
  share it) followed by the action: ``run`` (``command``, ``is_input``) is ``execute_bash``;
  ``read`` (``path``, ``view_range``) is ``str_replace_editor view``; ``edit`` with an ACI
  ``command`` (``path``, ``file_text``, ``old_str``, ``new_str``, ``insert_line``,
  ``view_range``) is ``str_replace_editor``; ``write`` (``path``, ``content``) is
  ``str_replace_editor create``; ``think`` (``thought``) is ``think``; ``finish``
  (``final_thought``, else ``outputs.content``, else — older finishes had only it —
  ``thought``) is ``finish``. Every other type — ``browse``,
  ``browse_interactive``, ``run_ipython``, ``call_tool_mcp``, ``delegate``, ``reject``,
  ``task_tracking``, an LLM-based ``edit``, one never seen — is an ``imported`` action with its
  ``args``; so are ``recall``, ``condensation``, ``condensation_request`` and
  ``change_agent_state``, which no model call produced (no ``cause``).
- **Observations** (``content``, ``extras``) answer the action whose ``id`` their ``cause``
  names (a second answer to one action, or one to an unknown id, answers nothing): ``run``
  answering a command is ``run.output`` (``extras.metadata.exit_code``, or the old
  ``extras.exit_code``; -1, "no exit code yet", is none); ``read``, ``edit`` and ``write``
  answering a file action are ``file.edit.output`` (``extras.path``, ``extras.diff``);
  ``error`` is an ``error`` (``extras.error_id`` its type); ``agent_state_changed``
  (``extras.agent_state``, ``extras.reason``) is the agent's ``agent.state`` (those before the
  first user message, ``loading``, are left out: the task has not come yet); ``null`` is left
  out; every other type is ``imported.output`` with its ``extras``.
- **Cost.** A model call costs the growth of ``llm_metrics.accumulated_cost`` since the
  previous one (OpenHands counts the condenser's calls there too). Without ``llm_metrics`` on
  any event, the ``EvalOutput``'s ``metrics.costs`` (one per call: a number, or an object's
  ``cost``) price the calls in order when there are as many as calls; else they are unpriced.
  A call's latency is the ``response_latencies`` entry of its response's id, in the event's
  ``llm_metrics`` or else the ``EvalOutput``'s ``metrics`` (where evaluation outputs keep
  them), else unknown (None). The messages sent to the model are not in the recording: the
  calls' prompts are empty.
- **The ending.** Where the recording does not end on the agent's own state, it ends as the
  last thing the agent did says: ``finished`` after a finish, ``awaiting_user_input`` after a
  message, ``error`` with the ``EvalOutput``'s error, else ``stopped``. A user message after
  the agent worked is preceded by ``awaiting_user_input`` when the recording has no state
  there (OpenHands leaves state changes out of a trajectory), as Chronicle's own agent waits.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from app.events import (
    ErrorObservation,
    Event,
    FileEditOutput,
    ImportedAction,
    ImportedOutput,
    Message,
    RunOutput,
)
from app.events.conversation import AgentStateName
from app.interchange.importers.model import (
    ImportedSession,
    ImportProblem,
    SessionBuilder,
    ToolUse,
    refused,
)
from app.interchange.importers.openhands_fields import (
    chronicle_tool,
    issue_name,
    latencies_by_response,
    nested,
    per_call_costs,
    recorded_latency_ms,
    upgraded,
    usage_of,
)
from app.interchange.importers.values import (
    first_line,
    integer,
    json_object,
    load_json,
    mapping,
    number,
    text_of,
)

FORMAT = "openhands"

#: Action types only a model produces: a model call even without ``tool_call_metadata``.
MODEL_ACTIONS = frozenset(
    {
        "run",
        "run_ipython",
        "read",
        "write",
        "edit",
        "browse",
        "browse_interactive",
        "think",
        "finish",
        "reject",
        "delegate",
        "call_tool_mcp",
        "task_tracking",
    }
)
#: OpenHands' agent states as Chronicle's (those without a counterpart are left out).
STATES: dict[str, AgentStateName] = {
    "loading": "loading",
    "init": "loading",
    "running": "running",
    "awaiting_user_input": "awaiting_user_input",
    "awaiting_user_confirmation": "awaiting_user_input",
    "paused": "paused",
    "stopped": "stopped",
    "rejected": "stopped",
    "finished": "finished",
    "error": "error",
    "rate_limited": "rate_limited",
}
OUTCOMES = frozenset({"finished", "awaiting_user_input", "stopped", "error", "paused"})
SOURCES = frozenset({"user", "agent", "environment"})


def import_openhands(file: str, data: bytes) -> list[ImportedSession]:
    """The sessions of an OpenHands file (see the module); ``ImportProblem`` names what is
    wrong with it."""
    stripped = data.lstrip()
    try:
        document = load_json(file, data)
    except ImportProblem:
        # JSON lines when the first line is an object of its own; else the file's error.
        if not stripped.startswith(b"{") or not _parses(stripped.split(b"\n", 1)[0]):
            raise
        return _json_lines(file, data)
    if isinstance(document, list):
        return [_session(SessionBuilder(FORMAT, file, data), _events(document), None)]
    if isinstance(document, dict) and "history" in document:
        return [_output(file, data, document, None)]
    raise ImportProblem(
        file,
        "is not an OpenHands recording: expected a list of events (a trajectory) or "
        f"evaluation output with a 'history', found {_what(document)}",
    )


def _parses(line: bytes) -> bool:
    try:
        load_json("", line)
    except ImportProblem:
        return False
    return True


def _json_lines(file: str, data: bytes) -> list[ImportedSession]:
    sessions = []
    for number_, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        document = load_json(file, line, line=number_)
        if not isinstance(document, dict) or "history" not in document:
            raise ImportProblem(
                file,
                f"is not an OpenHands evaluation output: found {_what(document)} where an "
                "object with a 'history' was expected",
                line=number_,
            )
        sessions.append(_output(file, line, document, number_))
    if not sessions:
        raise ImportProblem(file, "holds no OpenHands events")
    return sessions


def _output(file: str, data: bytes, output: dict[str, Any], line: int | None) -> ImportedSession:
    history = output.get("history")
    if not isinstance(history, list):
        raise ImportProblem(
            file, f"must be a list of events, not {_what(history)}", line=line, field="history"
        )
    builder = SessionBuilder(FORMAT, file, data.strip(), line=line)
    return _session(builder, _events(history), output)


def _events(history: list[Any]) -> list[Any]:
    """The events of a history; old outputs hold ``[action, observation]`` pairs."""
    if history and all(isinstance(item, list) for item in history):
        return [part for pair in history for part in pair]
    return history


def _what(value: Any) -> str:
    if isinstance(value, dict):
        return "an object without 'history'"
    if isinstance(value, list):
        return "a list"
    return {str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


class _Reader:
    """Turns one list of OpenHands events into the builder's events, in order."""

    def __init__(self, builder: SessionBuilder, output: dict[str, Any] | None) -> None:
        self.b = builder
        self.output = output
        self.model = "unknown"
        self.tools: list[dict[str, Any]] | None = None
        self.system: dict[str, Any] = {}
        self.actions: dict[str, int] = {}  # OpenHands id -> seq of the action it became
        self.kinds: dict[int, str] = {}  # seq -> kind, of actions
        self.answered: set[int] = set()
        self.calls: dict[str, int] = {}  # model_response id -> llm.call seq
        self.cost_so_far = 0.0
        self.metered = False  # an event carried ``llm_metrics``
        metrics = mapping(mapping(output).get("metrics"))
        self.latencies = latencies_by_response(metrics.get("response_latencies"))
        self.said: str | None = None  # last: "user"'s or "agent"'s message, model "work"
        self.last_done = ""  # what the agent last did: "finish", "message", "action"
        self.state_since_work: str | None = None  # the agent's state after its last work
        self.worked_since_user = False  # a model call or a state since the user's message
        self.user_spoke = False
        self.task = ""

    def problem(self, message: str, index: int, field: str | None = None) -> ImportProblem:
        return ImportProblem(self.b.file, message, line=self.b.line, index=index, field=field)

    # -- the two passes ---------------------------------------------------------------------

    def read(self, items: list[Any]) -> None:
        parsed = [self.parse(index, item) for index, item in enumerate(items)]
        groups: dict[str, list[ToolUse]] = {}
        for index, (item, kind, name, args) in enumerate(parsed):
            if kind == "action" and self.from_model(item, name):
                key = self.group(item, index)
                groups.setdefault(key, []).append(self.use(index, item, name, args))
        for index, (item, kind, name, args) in enumerate(parsed):
            try:
                if kind == "action":
                    self.action(index, item, name, args, groups)
                else:
                    self.observation(index, item, name)
            except ValidationError as exc:
                raise refused(self.b, index, exc) from None

    def parse(self, index: int, item: Any) -> tuple[dict[str, Any], str, str, dict[str, Any]]:
        if not isinstance(item, dict):
            raise self.problem(f"is not an event object but {_what(item)}", index)
        item = nested(item)
        if "action" in item:
            kind, name = "action", item["action"]
        elif "observation" in item:
            kind, name = "observation", item["observation"]
        else:
            raise self.problem(
                "is neither an action nor an observation (it has no 'action' or 'observation' key)",
                index,
            )
        if not isinstance(name, str) or not name:
            raise self.problem(f"must name the {kind} type, not {_what(name)}", index, kind)
        source = item.get("source")
        if source is not None and source not in SOURCES:
            raise self.problem(
                f"must be one of user, agent, environment, not {source!r}", index, "source"
            )
        args = item.get("args")
        if args is not None and not isinstance(args, dict):
            raise self.problem(f"must be an object, not {_what(args)}", index, "args")
        return item, kind, name, args or {}

    @staticmethod
    def source(item: dict[str, Any], default: str) -> Any:
        return item.get("source") or default

    def from_model(self, item: dict[str, Any], name: str) -> bool:
        if mapping(item.get("tool_call_metadata")):
            return True
        return self.source(item, "agent") == "agent" and name in MODEL_ACTIONS

    @staticmethod
    def response(item: dict[str, Any]) -> dict[str, Any]:
        return mapping(mapping(item.get("tool_call_metadata")).get("model_response"))

    def group(self, item: dict[str, Any], index: int) -> str:
        response_id = self.response(item).get("id")
        return f"response:{response_id}" if response_id else f"item:{index}"

    def use(self, index: int, item: dict[str, Any], name: str, args: dict[str, Any]) -> ToolUse:
        metadata = mapping(item.get("tool_call_metadata"))
        call_id = text_of(metadata.get("tool_call_id")) or f"openhands-{item.get('id', index)}"
        function = text_of(metadata.get("function_name"))
        tool, arguments = chronicle_tool(name, upgraded(args), item)
        if tool is not None and function == tool:
            # The model called a tool Chronicle's agent has too (OpenHands' names are the
            # same): its own arguments, over what the action's say.
            arguments = {**(arguments or {}), **self.called_with(item, call_id)}
        return ToolUse(
            call_id=call_id,
            name=function or name,
            arguments=args,
            tool=tool,
            tool_arguments=arguments,
        )

    def called_with(self, item: dict[str, Any], call_id: str) -> dict[str, Any]:
        """The arguments of tool call ``call_id`` in the action's ``model_response``."""
        choices = self.response(item).get("choices")
        for choice in choices if isinstance(choices, list) else []:
            calls = mapping(mapping(choice).get("message")).get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict) and call.get("id") == call_id:
                    return json_object(mapping(call.get("function")).get("arguments"))
        return {}

    # -- actions ----------------------------------------------------------------------------

    def action(
        self,
        index: int,
        item: dict[str, Any],
        name: str,
        args: dict[str, Any],
        groups: dict[str, list[ToolUse]],
    ) -> None:
        origin = self.b.origin(index, id=item.get("id"), field="action")
        source = self.source(item, "agent")
        if name == "null":
            return
        if name == "system":
            self.system = args
            tools = args.get("tools")
            if isinstance(tools, list) and all(isinstance(tool, dict) for tool in tools):
                self.tools = tools
            return
        if name == "message":
            self.message(index, item, args, self.speaker(item))
            return
        if not self.from_model(item, name):
            seq = self.b.add(
                ImportedAction(
                    tool=name, arguments=args, thought=text_of(args.get("thought")), source=source
                ),
                origin,
            )
            self.kinds[seq] = "imported"
            self.remember(item, seq)
            return
        key = self.group(item, index)
        call = self.calls.get(key)
        content = self.content(item, args)
        if call is None:
            call = self.calls[key] = self.model_call(index, item, content, groups[key])
        action = self.b.action(self.use(index, item, name, args), thought=content, cause=call)
        seq = self.b.add(action, origin)
        self.kinds[seq] = action.kind
        self.remember(item, seq)
        self.last_done = "finish" if action.kind == "finish" else "action"
        self.said = "work"

    def speaker(self, item: dict[str, Any]) -> str:
        """Who sent a message: as recorded, else (flat events) the user when it opens the
        recording or answers the agent's message, the agent otherwise."""
        if item.get("source") is not None:
            return str(item["source"])
        return "user" if self.said in (None, "agent") else "agent"

    def message(self, index: int, item: dict[str, Any], args: dict[str, Any], source: str) -> None:
        content = text_of(args.get("content"))
        origin = self.b.origin(index, id=item.get("id"), field="action")
        self.said = source
        if source == "agent":
            call = self.model_call(index, item, content, [])
            self.b.add(Message(content=content, source="agent", cause=call), origin)
            self.last_done = "message"
            return
        if source == "user":
            if self.worked_since_user and self.state_since_work not in OUTCOMES:
                self.b.state(
                    "awaiting_user_input",
                    "the agent waited for the user (inferred on import)",
                    self.b.origin(index, id=item.get("id"), field="inferred"),
                )
            self.worked_since_user = False
            self.state_since_work = None
            self.user_spoke = True
            self.task = self.task or content
        self.b.add(Message(content=content, source=source), origin)  # type: ignore[arg-type]

    def content(self, item: dict[str, Any], args: dict[str, Any]) -> str:
        choices = self.response(item).get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = mapping(choices[0].get("message"))
            if message.get("content") is not None:
                return text_of(message.get("content"))
        return text_of(args.get("thought"))

    def model_call(
        self, index: int, item: dict[str, Any], content: str, uses: list[ToolUse]
    ) -> int:
        response = self.response(item)
        model = text_of(response.get("model"))
        if not model:
            usage = mapping(mapping(item.get("llm_metrics")).get("accumulated_token_usage"))
            model = text_of(usage.get("model"))
        self.model = model or self.model
        choices = response.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else {}
        finish_reason = text_of(mapping(first).get("finish_reason")) or None
        self.worked_since_user = True
        self.state_since_work = None
        return self.b.model_call(
            self.b.origin(index, id=item.get("id"), field="model_response"),
            model=self.model,
            content=content,
            uses=uses,
            tools=self.tools,
            finish_reason=finish_reason,
            usage=usage_of(mapping(response.get("usage"))),
            cost_usd=self.cost(item),
            latency_ms=self.latency_ms(item, response.get("id")),
        )

    def latency_ms(self, item: dict[str, Any], response_id: Any) -> float | None:
        """What OpenHands measured for this response: in the event's ``llm_metrics``, else
        in the evaluation output's ``metrics``; None when neither says."""
        if not response_id:
            return None
        measured = recorded_latency_ms(item, response_id)
        if measured is None:
            seconds = self.latencies.get(str(response_id))
            measured = None if seconds is None else seconds * 1000
        return measured

    def cost(self, item: dict[str, Any]) -> float | None:
        if item.get("llm_metrics") is not None:
            self.metered = True
        accumulated = number(mapping(item.get("llm_metrics")).get("accumulated_cost"))
        if accumulated is None:
            return None
        spent = round(accumulated - self.cost_so_far, 12)
        self.cost_so_far = max(accumulated, self.cost_so_far)
        return spent if spent >= 0 else None

    def remember(self, item: dict[str, Any], seq: int) -> None:
        if item.get("id") is not None:
            self.actions[str(item["id"])] = seq

    # -- observations -----------------------------------------------------------------------

    def observation(self, index: int, item: dict[str, Any], name: str) -> None:
        if name == "null":
            return
        origin = self.b.origin(index, id=item.get("id"), field="observation")
        extras = item.get("extras")
        if extras is not None and not isinstance(extras, dict):
            raise self.problem(f"must be an object, not {_what(extras)}", index, "extras")
        extras = extras or {}
        if name == "agent_state_changed":
            state = STATES.get(text_of(extras.get("agent_state")))
            if state is not None and self.user_spoke:  # before the task: loading, no news
                reason = text_of(extras.get("reason"))
                if text_of(extras.get("agent_state")) == "rejected":
                    reason = f"the agent rejected the task{': ' if reason else ''}{reason}"
                self.b.state(state, reason, origin)
                self.state_since_work = state
                self.worked_since_user = True
            return
        if item.get("cause") is None and item.get("id") is None:
            # A flat history's observation follows the action it answers.
            action = next((seq for seq in reversed(self.kinds) if seq not in self.answered), None)
        else:
            action = self.actions.get(str(item.get("cause")))
        if action in self.answered:
            action = None
        kind = self.kinds.get(action) if action is not None else None
        content = text_of(item.get("content"))
        event: Event
        if name == "run" and kind == "run":
            metadata = mapping(extras.get("metadata"))
            exit_code = integer(metadata.get("exit_code", extras.get("exit_code")))
            event = RunOutput(output=content, exit_code=None if exit_code == -1 else exit_code)
        elif name in ("read", "edit", "write") and kind == "file.edit":
            event = FileEditOutput(
                path=text_of(extras.get("path")), diff=text_of(extras.get("diff")), content=content
            )
        elif name == "error":
            event = ErrorObservation(
                message=content, error_type=text_of(extras.get("error_id")) or "imported"
            )
        else:
            event = ImportedOutput(observation=name, content=content, extras=extras)
        # From the environment whatever OpenHands says (it marks an edit's result "agent"):
        # Chronicle's controller takes an action as answered by the environment only.
        self.b.add(event.model_copy(update={"cause": action}), origin)
        if action is not None:
            self.answered.add(action)

    # -- the end ----------------------------------------------------------------------------

    def end(self) -> None:
        if self.state_since_work in OUTCOMES:
            return
        origin = self.b.origin(None, field="end")
        error = text_of((self.output or {}).get("error"))
        if self.last_done == "finish":
            self.b.state("finished", "the agent called finish", origin)
        elif self.last_done == "message":
            self.b.state("awaiting_user_input", "the agent answered the user", origin)
        elif error:
            self.b.state("error", error, origin)
        else:
            self.b.state("stopped", "the recording ends here, without a finish", origin)


def _session(
    builder: SessionBuilder, items: list[Any], output: dict[str, Any] | None
) -> ImportedSession:
    reader = _Reader(builder, output)
    reader.read(items)
    reader.end()
    if output is not None and not reader.metered:
        costs = per_call_costs(mapping(output.get("metrics")).get("costs"))
        if costs is not None:
            builder.price_calls(costs)
    instance = text_of((output or {}).get("instance_id")) or issue_name((output or {}).get("issue"))
    task = first_line(reader.task) or builder.file
    title = f"{instance}: {task}" if instance else task
    imported: dict[str, Any] = {"events": len(items)}
    for key in ("agent_class", "openhands_version"):
        if reader.system.get(key):
            imported[key] = text_of(reader.system[key])
    if reader.system.get("content"):
        imported["system_prompt"] = text_of(reader.system["content"])
    if output is not None:
        for key in ("instance_id", "metrics", "error"):
            if output.get(key) is not None:
                imported[key] = output[key]
    return builder.build(
        title=f"openhands: {title}",
        config={"agent": FORMAT, "model": reader.model, "imported": imported},
    )
