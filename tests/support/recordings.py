"""A session recorded for replay tests: written, run, failed, fixed and finished, with a real
local sandbox and litellm against the fake model server (five model calls)."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

TASK = "Write hello.py that prints hello, and run it."

#: The fake model's replies, one per model call.
SCRIPT = [
    Reply(
        tool_calls=[
            tool_call(
                "str_replace_editor", command="create", path="hello.py", file_text="print(1/0)\n"
            )
        ]
    ),
    Reply(tool_calls=[tool_call("execute_bash", command="python3 hello.py")]),
    Reply(
        content="Division by zero; fixing it.",
        tool_calls=[
            tool_call(
                "str_replace_editor",
                command="str_replace",
                path="hello.py",
                old_str="1/0",
                new_str="'hello'",
            )
        ],
    ),
    Reply(tool_calls=[tool_call("execute_bash", command="python3 hello.py")]),
    Reply(tool_calls=[tool_call("finish", message="hello.py prints hello")]),
]


async def record(store: EventStore, fake: FakeLlmServer, tmp_path: Path) -> UUID:
    """Run the session in tmp_path / "ws" until it finishes; its id."""
    fake.script(*SCRIPT)
    session, outcome = await run_session(
        store,
        settings_for(fake, tmp_path),
        SessionOptions(workspace=tmp_path / "ws"),
        task=TASK,
    )
    assert outcome == "finished"
    return session
