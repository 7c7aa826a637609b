"""ATIF trajectories as Chronicle sessions (``chronicle import --from atif FILE``).

The file is one trajectory (``schema.py``: any ``ATIF-v1.N``, Harbor's structure and rules;
anything else is refused with the field named). It becomes one session, in the importers'
common way (``app/interchange/importers/model.py``: ids from the file's sha256, so the
same file again writes nothing; ``imported`` on every event, ``index`` the step's position,
``id`` a tool call's id, ``field`` the part of the step).

- A ``user`` or ``system`` step is a ``message`` of that source, its text the step's
  ``message`` (the text parts of a multimodal one).
- An ``agent`` step is an ``llm.call``: the message is the response's text,
  ``reasoning_content`` its reasoning, ``model_name`` (else the agent's) the model,
  ``metrics`` its usage (``prompt_tokens``, ``completion_tokens``, ``cached_tokens``;
  ``extra.cache_creation_input_tokens`` and ``extra.reasoning_tokens``) and cost; what
  Chronicle's own export put in ``extra.chronicle`` (finish reason, response id, latency,
  attempts, parameters, error) is read back. A step without tool calls also gets the agent's
  ``message``, as Chronicle's agent records a reply. A step with ``llm_call_count`` 0 is no
  model call: its tool calls are actions no call caused, or its text an agent's message.
- Each tool call is an action: Chronicle's own tool calls (``execute_bash``,
  ``str_replace_editor``, ``think``, ``finish``; ``bash``/``Bash`` of a ``command``) the
  action Chronicle's agent makes of them, an action kind of Chronicle's export (``run``,
  ``file.read``, ...) that action, anything else an ``imported`` action with the name and
  arguments as recorded.
- Each result answers the action of its ``source_call_id``; a result without one answers
  the tool call at its position. Its ``content`` (text parts) is the observation's text:
  ``run.output`` of a command, ``file.*.output`` of a file action, ``mcp.result`` of an MCP
  call, ``error`` when Chronicle's export said so, else ``imported.output``. One result no
  tool call takes is an ``imported.output`` of the model call.
- The session ends in the state Chronicle's export recorded, else ``finished`` after a
  ``finish`` action and ``stopped`` otherwise.

What the events do not reproduce is kept, verbatim, on the event it belongs to
(``imported.kept``: ``step``, ``tool_call``, ``result``; the root's in
``config.imported.kept.trajectory``): each object is rebuilt from the new events with the
export's own code (``steps.py``) and every member that differs is kept. So the export of
an imported trajectory is the file again, member for member, whatever its producer put in
``extra``, timestamps, token ids, logprobs, images, subagent trajectories included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, get_args

from pydantic import ValidationError

from app.events import (
    ErrorObservation,
    Event,
    FileEditOutput,
    FileReadOutput,
    FileWriteOutput,
    ImportedOutput,
    LlmUsage,
    McpResult,
    Message,
    RunOutput,
)
from app.events.conversation import AgentStateName
from app.events.registry import ACTION_KINDS, EVENT_TYPES
from app.interchange.atif.export import root, steps_with_items
from app.interchange.atif.schema import ContentPart, Step, Trajectory, rule_problems
from app.interchange.atif.schema import ToolCall as AtifToolCall
from app.interchange.atif.steps import Item, leftover, own_tool_call, result, tool_call
from app.interchange.importers.model import (
    ImportedSession,
    ImportProblem,
    SessionBuilder,
    ToolUse,
)
from app.interchange.importers.values import first_line, integer, load_json, number

FORMAT = "atif"
#: Chronicle's own tools: a tool call of one is the action Chronicle's agent makes of it.
OWN_TOOLS = frozenset({"execute_bash", "str_replace_editor", "think", "finish"})
#: Other agents' shells whose ``command`` is a command line.
SHELLS = frozenset({"bash", "Bash"})
_STATES = frozenset(get_args(AgentStateName))


def import_atif(file: str, data: bytes) -> list[ImportedSession]:
    """The session of one ATIF trajectory file (see the module)."""
    document = load_json(file, data)
    if not isinstance(document, dict):
        raise ImportProblem(file, "is not an ATIF trajectory: expected a JSON object")
    trajectory = parse(file, document)
    return [_Reader(file, data, document, trajectory).session()]


def parse(file: str, document: Mapping[str, Any]) -> Trajectory:
    """``document`` as a trajectory; ``ImportProblem`` naming the first field that is not
    ATIF (its type, a member ATIF does not define, a rule of Harbor's)."""
    try:
        trajectory = Trajectory.model_validate(document)
    except ValidationError as exc:
        errors = exc.errors()
        error = errors[0]
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise ImportProblem(
            file, f"is not ATIF: {error['msg']}{more}", field=_path(error["loc"]) or None
        ) from None
    problem = next(rule_problems(trajectory), None)
    if problem is not None:
        raise ImportProblem(file, f"is not ATIF: {problem[1]}", field=problem[0])
    return trajectory


class _Reader:
    def __init__(
        self, file: str, data: bytes, document: dict[str, Any], trajectory: Trajectory
    ) -> None:
        self.b = SessionBuilder(FORMAT, file, data)
        self.document = document
        self.t = trajectory
        self.model = trajectory.agent.model_name or next(
            (step.model_name for step in trajectory.steps if step.model_name), "unknown"
        )
        #: (event index, part, the object as the file had it, how the export builds it)
        self.children: list[tuple[int, str, Any, Callable[[Item], dict[str, Any]]]] = []
        self.finished = False

    def session(self) -> ImportedSession:
        for index, (raw, step) in enumerate(zip(self.document["steps"], self.t.steps, strict=True)):
            self.step(index, raw, step)
        self.end()
        title, config = self.title(), self.config()
        self.keep(title, config)
        return self.b.build(title=title, config=config)

    # the steps

    def step(self, index: int, raw: dict[str, Any], step: Step) -> None:
        text = _text(step.message)
        own = _chronicle(step.extra)
        origin = self.b.origin(index, field="step")
        if step.source in ("user", "system"):
            self.b.add(Message(content=text, source=step.source), origin)
        elif step.llm_call_count == 0 and not step.tool_calls:
            self.b.add(Message(content=text, source="agent"), origin)
        elif step.llm_call_count == 0:
            source = own.get("source") if own.get("source") in ("user", "system") else "agent"
            self.calls(index, raw, step, cause=None, source=str(source), thought=text)
        else:
            seq = self.model_call(index, step, text, own)
            self.calls(index, raw, step, cause=seq, source="agent", thought=text)
            if not step.tool_calls and text:
                reply = Message(content=text, source="agent", cause=seq)
                self.b.add(reply, self.b.origin(index, field="reply"))

    def model_call(self, index: int, step: Step, text: str, own: Mapping[str, Any]) -> int:
        metrics = step.metrics
        seq = self.b.model_call(
            self.b.origin(index, field="step"),
            model=step.model_name or self.model,
            content=text or None,
            uses=[_tool_use(call) for call in step.tool_calls or []],
            finish_reason=_string(own.get("finish_reason")),
            usage=_usage(step),
            cost_usd=number(metrics.cost_usd) if metrics else None,
            latency_ms=_at_least_zero(number(own.get("latency_ms"))),
        )
        call = self.b.events[seq - 1]
        response = call.response.model_copy(  # type: ignore[attr-defined]
            update={
                "reasoning_content": step.reasoning_content,
                "id": _string(own.get("response_id")),
                "model": step.model_name,
            }
        )
        attempts = integer(own.get("attempts"))
        params = own.get("params")
        self.b.events[seq - 1] = call.model_copy(
            update={
                "response": response,
                "error": _string(own.get("error")),
                "error_kind": _string(own.get("error_kind")),
                "attempts": attempts if attempts is not None and attempts >= 0 else 1,
                "params": params if isinstance(params, dict) else {},
            }
        )
        return seq

    def calls(
        self,
        index: int,
        raw: dict[str, Any],
        step: Step,
        *,
        cause: int | None,
        source: str,
        thought: str,
    ) -> None:
        actions: list[tuple[int, Event]] = []  # (seq, action) of each tool call, in order
        for number_, call in enumerate(step.tool_calls or []):
            action = self.action(call, thought=thought, cause=cause, source=source)
            seq = self.b.add(action, self.b.origin(index, id=call.tool_call_id, field="tool_call"))
            actions.append((seq, action))
            build = _tool_call_builder(call, cause is not None)
            self.children.append((seq - 1, "tool_call", raw["tool_calls"][number_], build))
        results = step.observation.results if step.observation else []
        answered: set[int] = set()
        spare = cause is not None
        by_id = {call.tool_call_id: n for n, call in enumerate(step.tool_calls or [])}
        for number_, found in enumerate(results):
            raw_result = raw["observation"]["results"][number_]
            target = by_id.get(found.source_call_id) if found.source_call_id else number_
            text = _text(found.content)
            if target is not None and target < len(actions) and target not in answered:
                answered.add(target)
                seq, action = actions[target]
                call_id = step.tool_calls[target].tool_call_id  # type: ignore[index]
                answer = _observation(action, text, _chronicle(found.extra), call_id)
                cause_of = seq
            elif spare:
                spare, call_id = False, None
                answer = ImportedOutput(observation="result", content=text)
                cause_of = cause  # type: ignore[assignment]
            else:
                continue  # kept with the step's observation
            at = self.b.add(
                answer.model_copy(update={"cause": cause_of}),
                self.b.origin(index, id=found.source_call_id, field="result"),
            )
            self.children.append((at - 1, "result", raw_result, _result_builder(call_id)))

    def action(self, call: AtifToolCall, *, thought: str, cause: int | None, source: str) -> Event:
        if call.function_name in ACTION_KINDS and call.function_name != "imported":
            try:  # an action of Chronicle's own export, written with its kind
                own = EVENT_TYPES[call.function_name].model_validate(
                    {**call.arguments, "tool_call_id": call.tool_call_id, "thought": thought}
                )
                return own.model_copy(update={"cause": cause, "source": source})
            except ValidationError:
                pass
        return self.b.action(_tool_use(call), thought=thought, cause=cause, source=source)

    def end(self) -> None:
        own = _chronicle(self.t.extra)
        state = own.get("state")
        finished = any(e.kind == "finish" for e in self.b.events)
        origin = self.b.origin(None, field="end")
        if isinstance(state, str) and state in _STATES:
            self.b.state(state, _string(own.get("reason")) or "", origin)  # type: ignore[arg-type]
        elif finished:
            self.b.state("finished", "the trajectory ends with a finish", origin)
        else:
            self.b.state("stopped", "the trajectory ends here", origin)

    # the session

    def title(self) -> str:
        own = _chronicle(self.t.extra).get("title")
        if isinstance(own, str) and own:
            return own
        task = next((_text(s.message) for s in self.t.steps if s.source == "user"), "")
        return f"atif: {self.t.agent.name}: {first_line(task)}"

    def config(self) -> dict[str, Any]:
        imported = {
            "schema_version": self.t.schema_version,
            "session_id": self.t.session_id,
            "trajectory_id": self.t.trajectory_id,
        }
        return {
            "agent": self.t.agent.name,
            "model": self.model,
            "imported": {key: value for key, value in imported.items() if value is not None},
        }

    def keep(self, title: str, config: dict[str, Any]) -> None:
        """Keep on each event what the export would not give back (see the module)."""
        for at, part, original, build in self.children:
            self._keep(at, part, leftover(original, build(self._item(at))))
        items = self._items(title, config)
        steps = steps_with_items(items)
        for (built, item), original in zip(steps, self.document["steps"], strict=True):
            self._keep(item.seq - 1, "step", leftover(original, built))
        items = self._items(title, config)
        document = root(self.b.session_id, config, [s for s, _ in steps_with_items(items)], items)
        rest = leftover(self.document, document)
        if rest is not None and "steps" in rest:  # (the import's own mistake: never seen)
            raise ImportProblem(self.b.file, "its steps could not be kept as they are")
        if rest:
            config["imported"]["kept"] = {"trajectory": rest}

    def _keep(self, at: int, part: str, held: dict[str, Any] | None) -> None:
        if held is None:
            return
        event = self.b.events[at]
        origin = event.imported
        assert origin is not None
        kept = {**(origin.kept or {}), part: held}
        self.b.events[at] = event.model_copy(
            update={"imported": origin.model_copy(update={"kept": kept})}
        )

    def _item(self, at: int) -> Item:
        event = self.b.events[at]
        return Item(event.kind, event.source, at + 1, event.cause, event.payload())

    def _items(self, title: str, config: dict[str, Any]) -> list[Item]:
        created = Item("session.created", "system", 1, None, {"title": title, "config": config})
        return [created, *(self._item(at) for at in range(1, len(self.b.events)))]


def _tool_call_builder(call: AtifToolCall, by_model: bool) -> Callable[[Item], dict[str, Any]]:
    if by_model:
        recorded = _tool_use(call).tool_call().model_dump()
        return lambda item: tool_call(recorded, item)
    return lambda item: own_tool_call(
        item, str(item.payload.get("tool_call_id") or f"call_{item.seq}")
    )


def _result_builder(call_id: str | None) -> Callable[[Item], dict[str, Any]]:
    return lambda item: result(item, call_id)


def _tool_use(call: AtifToolCall) -> ToolUse:
    name, arguments = call.function_name, call.arguments
    tool: str | None = None
    tool_arguments: dict[str, Any] | None = None
    if name in OWN_TOOLS:
        tool, tool_arguments = name, arguments
    elif name in SHELLS and isinstance(arguments.get("command"), str):
        tool, tool_arguments = "execute_bash", {"command": arguments["command"]}
    return ToolUse(
        call_id=call.tool_call_id,
        name=name,
        arguments=arguments,
        tool=tool,
        tool_arguments=tool_arguments,
    )


def _observation(action: Event, text: str, own: Mapping[str, Any], call_id: str) -> Event:
    """What answered ``action``: its own observation kind, holding ``text``."""
    path = str(getattr(action, "path", ""))
    if own.get("kind") == "error":
        return ErrorObservation(
            message=text, error_type=_string(own.get("error_type")) or "", tool_call_id=call_id
        )
    if action.kind == "run":
        exit_code = integer(own.get("exit_code"))
        return RunOutput(
            output=text,
            exit_code=exit_code if exit_code is not None and abs(exit_code) < 2**31 else None,
            timed_out=own.get("timed_out") is True,
            truncated=own.get("truncated") is True,
            still_running=own.get("still_running") is True,
        )
    if action.kind == "file.read":
        return FileReadOutput(path=path, content=text)
    if action.kind == "file.write":
        return FileWriteOutput(path=path, diff=text)
    if action.kind == "file.edit":
        if own.get("diff") is True:
            return FileEditOutput(path=path, diff=text)
        return FileEditOutput(path=path, content=text)
    if action.kind == "mcp.call":
        parts = [{"type": "text", "text": text}] if text else []
        return McpResult(content=parts, is_error=own.get("is_error") is True)
    kind = own.get("observation") if action.kind == "imported" else None
    return ImportedOutput(observation=_string(kind) or "result", content=text)


def _usage(step: Step) -> LlmUsage:
    metrics = step.metrics
    if metrics is None:
        return LlmUsage()
    extra = metrics.extra or {}

    def count(value: Any) -> int | None:
        found = integer(value)
        return found if found is not None and 0 <= found < 2**53 else None

    prompt, completion = count(metrics.prompt_tokens), count(metrics.completion_tokens)
    return LlmUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=count(metrics.cached_tokens),
        total_tokens=(prompt or 0) + (completion or 0),
        cache_creation_tokens=count(extra.get("cache_creation_input_tokens")),
        reasoning_tokens=count(extra.get("reasoning_tokens")),
    )


def _text(value: str | list[ContentPart] | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return "".join(part.text or "" for part in value if part.type == "text")


def _chronicle(extra: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """What Chronicle's export wrote in an ``extra`` (``extra.chronicle``)."""
    own = (extra or {}).get("chronicle")
    return own if isinstance(own, Mapping) else {}


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _at_least_zero(value: float | None) -> float | None:
    return value if value is not None and value >= 0 else None


def _path(location: tuple[Any, ...]) -> str:
    out = ""
    for part in location:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "list[ContentPart]", "function-after[_version(), str]"):
            continue  # pydantic's name of a union's branch
        else:
            out += f".{part}" if out else str(part)
    return out


__all__ = ["FORMAT", "import_atif", "parse"]
