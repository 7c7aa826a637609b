"""Golden histories: recorded sessions kept in golden/ beside this file (JSON lines) are replayed,
strictly, against the current agent code. A change to the system prompt, a tool schema or
the way a reply becomes actions makes one of them diverge, and the failure shows the
difference (the replay's report: the prompt message diffed, the tools, the action's fields).

After an intended change, write them again (and review the diff of golden/ in git):

    CHRONICLE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/integration/replay/test_golden.py

Each file holds one session: a line per prompt message or tool list (``{"prompt": hash,
"message": ...}``, what the diff is made from) and a line per event (``{"kind", "source",
"cause", "payload"}``, in seq order). Loading one appends the events to a fresh session as
they were recorded, and stores the prompts.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from app.agent.prompts import SYSTEM_PROMPT
from app.events import Message, canonical_json, parse_event
from app.replay import AgentConfig, replay
from app.replay.report import describe
from app.store import EventStore
from tests.support.written_sessions import Recorder

GOLDEN = Path(__file__).with_name("golden")
UPDATE = os.environ.get("CHRONICLE_UPDATE_GOLDEN") == "1"


async def fix_the_tests(recorder: Recorder) -> None:
    await recorder.start("The tests fail; fix them.")
    await recorder.state("running")
    [run] = await recorder.call(("execute_bash", {"command": "python -m pytest -q"}))
    await recorder.output(run, "F\nFAILED test_add.py::test_add - assert 3 == 4\n1 failed", 1)
    [view] = await recorder.call(
        ("str_replace_editor", {"command": "view", "path": "add.py"}), content="Let me look."
    )
    await recorder.append_answer(
        view,
        "file.edit.output",
        path="add.py",
        content="1\tdef add(a, b):\n2\t    return a + b + 1\n",
    )
    [edit] = await recorder.call(
        (
            "str_replace_editor",
            {
                "command": "str_replace",
                "path": "add.py",
                "old_str": "a + b + 1",
                "new_str": "a + b",
            },
        ),
    )
    await recorder.append_answer(
        edit, "file.edit.output", path="add.py", diff="-    return a + b + 1\n+    return a + b\n"
    )
    [run] = await recorder.call(("execute_bash", {"command": "python -m pytest -q"}))
    await recorder.output(run, ".\n1 passed")
    await recorder.call(("finish", {"message": "add() no longer adds 1; the test passes."}))
    await recorder.state("finished", "the agent called finish")


async def ask_then_answer(recorder: Recorder) -> None:
    await recorder.start("Rename the function.")
    await recorder.state("running")
    await recorder.call(content="Which function, and what should it be called?")
    await recorder.state("awaiting_user_input", "the agent asked for your input")
    await recorder.append(Message(content="parse_args, to read_options"))
    await recorder.state("running")
    await recorder.call(
        ("think", {"thought": "grep for it first"}),
        ("execute_bash", {"command": "grep -rn parse_args ."}),
    )
    # (the think above is answered by nothing; the run by its output)
    events = await recorder.store.read(recorder.session)
    run = next(e.seq for e in reversed(events) if e.kind == "run")
    await recorder.output(run, "./cli.py:3:def parse_args():")
    await recorder.call(("teleport", {"to": "cli.py"}))  # a tool that does not exist
    await recorder.call(("finish", {"message": "renamed"}))
    await recorder.state("finished", "the agent called finish")


SCRIPTS: dict[str, Callable[[Recorder], Awaitable[None]]] = {
    "fix_the_tests": fix_the_tests,
    "ask_then_answer": ask_then_answer,
}


async def write_golden(store: EventStore, name: str) -> None:
    recorder = Recorder(store, workspace="/workspace")
    await SCRIPTS[name](recorder)
    events = await store.read(recorder.session)
    keys: list[str] = []
    for event in events:
        if event.kind == "llm.call":
            keys += [*event.payload["prompt"], event.payload["tools"]]
    stored = await store.read_messages(keys)
    lines = [{"prompt": key, "message": stored[key]} for key in dict.fromkeys(keys)]
    lines += [
        {"kind": e.kind, "source": e.source, "cause": e.cause, "payload": e.payload} for e in events
    ]
    text = "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in lines)
    (GOLDEN / f"{name}.jsonl").write_text(text, encoding="utf-8")


async def load_golden(store: EventStore, path: Path) -> uuid.UUID:
    """Append the file's events to a fresh session, seq for seq, and store its prompts."""
    session = uuid.uuid4()
    text = await asyncio.to_thread(path.read_text, encoding="utf-8")
    lines: list[dict[str, Any]] = [json.loads(line) for line in text.splitlines()]
    prompts = [line for line in lines if "prompt" in line]
    await store.put_messages(
        [p["prompt"] for p in prompts], [canonical_json(p["message"]) for p in prompts]
    )
    for seq, line in enumerate((line for line in lines if "kind" in line), start=1):
        event = parse_event(
            {
                "kind": line["kind"],
                "source": line["source"],
                "cause": line["cause"],
                **line["payload"],
            }
        )
        await store.append(session, [event], expected_seq=seq - 1)
    return session


@pytest.mark.parametrize("name", sorted(SCRIPTS))
async def test_golden_history_replays_against_the_current_agent(
    store: EventStore, name: str
) -> None:
    path = GOLDEN / f"{name}.jsonl"
    if UPDATE:
        await write_golden(store, name)
    assert path.exists(), f"{path.name} is missing; write it with CHRONICLE_UPDATE_GOLDEN=1"
    session = await load_golden(store, path)
    result = await replay(store, session, mode="strict")
    assert result.matched, (
        f"the golden history {path.name} no longer replays against the current agent code:\n"
        f"{describe(result)}\nIf the change is intended, write the golden histories again: "
        "CHRONICLE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest "
        "tests/integration/replay/test_golden.py"
    )
    assert result.model_calls == 0 and result.steps_served == result.steps_recorded


async def test_a_changed_prompt_fails_a_golden_history_with_a_readable_diff(
    store: EventStore,
) -> None:
    """What a maintainer reads when the agent's prompt changes (here through the override,
    as a changed ``prompts.py`` would)."""
    session = await load_golden(store, GOLDEN / "fix_the_tests.jsonl")
    changed = SYSTEM_PROMPT.replace("Work in small steps", "Work in big steps")
    result = await replay(store, session, AgentConfig(system_prompt=changed))
    text = describe(result)
    assert "diverged (request): model call 1: prompt message 0 (system) differs" in text
    assert "-- Work in small steps" in text and "+- Work in big steps" in text


async def test_a_later_request_difference_diffs_the_whole_recorded_prompt(
    store: EventStore,
) -> None:
    """A recorded call names only the messages it adds to the previous call's prompt
    (``prompt_kept``); the difference of a later call must be made against its whole prompt.
    Against the added messages alone, message 0 would be an assistant or tool message."""
    session = await load_golden(store, GOLDEN / "fix_the_tests.jsonl")
    changed = SYSTEM_PROMPT.replace("Work in small steps", "Work in big steps")
    result = await replay(store, session, AgentConfig(system_prompt=changed), mode="positional")
    assert len(result.differences) == result.steps_recorded > 2
    for difference in result.differences:
        assert difference.message is not None
        assert (difference.message.index, difference.message.recorded_role) == (0, "system")
        assert "+- Work in big steps" in difference.message.diff
