"""The shape of the scale benchmark's generated sessions: what a coding agent's session records.

Modelled on the recordings in tests/integration/replay/golden/: ``session.created``, the
user's task, ``agent.state`` running, then steps of a model call (``llm.call`` with its prompt
by content hash, growing by two messages per step with ``prompt_kept``, usage and a cost), a
tool call (``run``, ``file.edit`` or ``file.read``) and its observation, and at the end a
``finish`` and ``agent.state`` finished. Mostly small events; about one session in three has
one command whose output is over the store's blob threshold (a long build or test log), so it
becomes a blob. Sessions are as long as asked on average (pairs of sessions are longer and
shorter by the same amount, so the total is exact) and start evenly over ``span``.

Everything is pure and deterministic: session ``index`` of a ``Shape`` is always the same
events (ids, times and texts), so a run can be generated in parallel and checked in tests.
The events are the application's own models; the loader encodes them with the store's own
code.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from app.events import (
    AgentState,
    FileEdit,
    FileEditOutput,
    FileRead,
    FileReadOutput,
    Finish,
    LlmCall,
    Message,
    Run,
    RunOutput,
    SessionCreated,
)
from app.events.canonical import canonical_json, sha256
from app.events.llm import LlmResponse, LlmUsage, ToolCall
from app.events.session_config import SessionConfig

#: Events of a session that are not steps: created, task, running; finish's call, finish, end.
FIXED_EVENTS = 6
MODELS = ("anthropic/claude-sonnet-4-5", "openai/gpt-4.1", "openai/gpt-4.1-mini")
#: $ per token (input, cached input, output): a plausible price list, so costs sum to something.
PRICES = {
    "anthropic/claude-sonnet-4-5": (3e-6, 0.3e-6, 15e-6),
    "openai/gpt-4.1": (2e-6, 0.5e-6, 8e-6),
    "openai/gpt-4.1-mini": (0.4e-6, 0.1e-6, 1.6e-6),
}
SYSTEM_PROMPT = (
    "You are Chronicle's coding agent. You work in a sandbox on the user's task.\n\n"
    "Workspace: /workspace\n- Use execute_bash to run commands and str_replace_editor to view "
    "and change files.\n- Work in small steps: look before you change, run what you wrote, read "
    "errors and fix them.\n- When the task is done, call finish with a short summary.\n"
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"the {name} tool",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
    for name in ("execute_bash", "str_replace_editor", "think", "finish")
]
TASKS = (
    "The tests fail; fix them",
    "Add a --verbose flag to the command line",
    "Make the parser accept trailing commas",
    "Speed up the report query",
    "Port the settings loader to pydantic",
    "Find why the upload sometimes hangs",
)
WORDS = (
    "def return self value config path error test assert import from class module request "
    "session event store index query result parse token buffer stream open close"
).split()


class Shape(BaseModel):
    """How many sessions of how many events, when, by how many people."""

    sessions: int = Field(ge=1)
    events: int = Field(ge=FIXED_EVENTS)
    #: Members who own the sessions in turn (each owns 1/members of them).
    members: int = Field(default=10, ge=1)
    start: datetime = datetime(2026, 9, 1, tzinfo=UTC)
    span: timedelta = timedelta(days=60)
    #: Share of sessions with one command output over the blob threshold.
    blob_share: float = Field(default=1 / 3, ge=0, le=1)
    #: Characters of such an output (over the store's default threshold of 64 KiB).
    blob_chars: int = 80_000
    seed: int = 28

    @property
    def mean_events(self) -> int:
        return self.events // self.sessions

    def session_length(self, index: int) -> int:
        """Events of session ``index``: the mean, plus or minus the same amount in each pair,
        the remainder of the division spread over the first sessions."""
        mean = self.mean_events
        extra = 1 if index < self.events - mean * self.sessions else 0
        swing = max(0, min(40, mean - 2 * FIXED_EVENTS))
        pair = index // 2
        if swing == 0 or (index == self.sessions - 1 and self.sessions % 2):
            return mean + extra
        d = random.Random(self.seed * 1_000_003 + pair).randint(0, swing)
        return mean + extra + (d if index % 2 == 0 else -d)


class GeneratedSession(NamedTuple):
    session_id: uuid.UUID
    #: Which member owns it (0 .. members - 1).
    owner: int
    events: list[Any]
    #: created_at of each event, in order.
    times: list[datetime]
    #: sha256 hex -> canonical JSON of each prompt message its model calls name.
    messages: dict[str, str]


def message_entry(message: dict[str, Any]) -> tuple[str, str]:
    """A prompt message's key and text as the store keeps them (``llm_messages``)."""
    text = canonical_json(message)
    return sha256(text.encode()).hex(), text


def _uuid4(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def _uuid7(rng: random.Random, moment: datetime) -> uuid.UUID:
    """A UUIDv7 of ``moment``, as ``app.events.ids.new_event_id`` makes one at that time."""
    millis = int(moment.timestamp() * 1000)
    value = (millis & ((1 << 48) - 1)) << 80 | rng.getrandbits(80)
    value &= ~(0xF << 76)
    value |= 0x7 << 76
    value &= ~(0x3 << 62)
    value |= 0x2 << 62
    return uuid.UUID(int=value)


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _lines(rng: random.Random, chars: int, prefix: str) -> str:
    out: list[str] = []
    size = 0
    number = 0
    while size < chars:
        number += 1
        line = f"{prefix}:{number}: {_text(rng, rng.randint(4, 12))}"
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:chars]


class _Writer:
    """Builds one session's events in order, with their times and seqs."""

    def __init__(self, rng: random.Random, start: datetime) -> None:
        self.rng = rng
        self.now = start
        self.events: list[Any] = []
        self.times: list[datetime] = []

    def add(self, event_type: type, seconds: float, **fields: Any) -> int:
        self.now += timedelta(seconds=seconds, microseconds=self.rng.randint(0, 999_999))
        self.events.append(event_type(event_id=_uuid7(self.rng, self.now), **fields))
        self.times.append(self.now)
        return len(self.events)


def generate_session(shape: Shape, index: int) -> GeneratedSession:
    """Session ``index`` of ``shape`` (always the same events)."""
    rng = random.Random(shape.seed * 7_919 + index)
    session_id = _uuid4(rng)
    length = shape.session_length(index)
    steps, padding = divmod(length - FIXED_EVENTS, 3)
    model = MODELS[index % len(MODELS)]
    price_in, price_cached, price_out = PRICES[model]
    start = shape.start + shape.span * index / shape.sessions
    task = f"{TASKS[index % len(TASKS)]} (#{index})"
    blob_step = rng.randrange(steps) if steps and rng.random() < shape.blob_share else -1

    w = _Writer(rng, start)
    messages: dict[str, str] = {}
    system_key, system_text = message_entry({"role": "system", "content": SYSTEM_PROMPT})
    tools_key, tools_text = message_entry({"tools": TOOLS})
    task_key, task_text = message_entry({"role": "user", "content": task})
    messages.update({system_key: system_text, tools_key: tools_text, task_key: task_text})
    config = SessionConfig(
        agent="codeact", model=model, runtime="docker", workspace="/workspace",
        tools=["execute_bash", "str_replace_editor", "think", "finish"], max_iterations=200,
    )  # fmt: skip
    w.add(SessionCreated, 0, title=task, config=config)
    w.add(Message, 0.01, content=task)
    w.add(AgentState, 0.2, state="running")

    prompt = [system_key, task_key]
    whole = 2
    prompt_tokens = 1_500

    def call(number: int, tool: str, arguments: dict[str, Any], kept: int | None) -> int:
        nonlocal prompt_tokens
        completion = rng.randint(40, 400)
        cached = int(prompt_tokens * 0.8) if number else 0
        cost = (prompt_tokens - cached) * price_in + cached * price_cached + completion * price_out
        call_id = f"call_{number}_0"
        seq = w.add(
            LlmCall, rng.uniform(0.5, 8.0), model=model, params={"temperature": 0},
            fingerprint=sha256(f"{session_id}:{number}".encode()).hex(), prompt=list(prompt),
            prompt_kept=kept, tools=tools_key,
            response=LlmResponse(
                content="", finish_reason="tool_calls",
                tool_calls=[ToolCall(id=call_id, name=tool, arguments=canonical_json(arguments))],
            ),
            usage=LlmUsage(
                prompt_tokens=prompt_tokens, completion_tokens=completion, cached_tokens=cached,
                total_tokens=prompt_tokens + completion,
            ),
            cost_usd=round(cost, 8), latency_ms=float(rng.randint(400, 9000)),
        )  # fmt: skip
        prompt_tokens += completion + rng.randint(100, 900)
        return seq

    kept: int | None = None
    for step in range(steps):
        call_id = f"call_{step}_0"
        kind = rng.random()
        if kind < 0.6:
            command = rng.choice(("python -m pytest -q", "git diff", "ls -la", "make lint"))
            seq = call(step, "execute_bash", {"command": command}, kept)
            action = w.add(Run, 0.05, cause=seq, command=command, tool_call_id=call_id)
            chars = shape.blob_chars if step == blob_step else rng.randint(60, 1_500)
            output = _lines(rng, chars, f"out{step}")
            w.add(RunOutput, rng.uniform(0.1, 20), cause=action, output=output, exit_code=0)
            result = output[:2_000]
        elif kind < 0.85:
            path = f"src/module_{rng.randint(1, 40)}.py"
            seq = call(step, "str_replace_editor", {"command": "str_replace", "path": path}, kept)
            old, new = _text(rng, 6), _text(rng, 6)
            action = w.add(
                FileEdit, 0.05, cause=seq, command="str_replace", path=path, old_str=old,
                new_str=new, tool_call_id=call_id,
            )  # fmt: skip
            diff = f"-    {old}\n+    {new}\n"
            w.add(FileEditOutput, rng.uniform(0.01, 0.2), cause=action, path=path, diff=diff)
            result = diff
        else:
            path = f"src/module_{rng.randint(1, 40)}.py"
            seq = call(step, "str_replace_editor", {"command": "view", "path": path}, kept)
            action = w.add(FileRead, 0.05, cause=seq, path=path, tool_call_id=call_id)
            content = _lines(rng, rng.randint(300, 3_000), path)
            w.add(FileReadOutput, rng.uniform(0.01, 0.2), cause=action, path=path, content=content)
            result = content
        assistant_key, assistant_text = message_entry(
            {"role": "assistant", "content": "", "tool_calls": [{"id": call_id}]}
        )
        result_key, result_text = message_entry(
            {"role": "tool", "tool_call_id": call_id, "content": result}
        )
        messages.update({assistant_key: assistant_text, result_key: result_text})
        kept, prompt, whole = whole, [assistant_key, result_key], whole + 2

    for _ in range(padding):
        w.add(Message, rng.uniform(1, 5), source="agent", content=_text(rng, 12))
    finish_id = f"call_{steps}_0"
    seq = call(steps, "finish", {"message": "done"}, kept)
    w.add(Finish, 0.05, cause=seq, message=f"{task}: done", tool_call_id=finish_id)
    w.add(AgentState, 0.05, state="finished", reason="the agent called finish")
    return GeneratedSession(session_id, index % shape.members, w.events, w.times, messages)
