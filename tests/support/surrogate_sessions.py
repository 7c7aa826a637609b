"""A session whose text holds lone surrogates everywhere a model or a sandbox can put one: the
task (and so the title), the model's reply, a tool call's arguments (sent as JSON escapes, as a
model sends them), a command's output, an MCP call's arguments and its result. Written as a
live run writes it (tests.support.written_sessions)."""

from __future__ import annotations

from uuid import UUID

from app.events import McpCall, McpResult
from app.store import EventStore
from tests.support.written_sessions import Recorder

#: What the page and the API must show of it (the surrogate as U+FFFD on screen).
TASK = "Rename caf\udce9.txt"
REPLY = "I will look at caf\udce9.txt first."
COMMAND = "cat caf\udce9.txt"
OUTPUT = "caf\udce9 says hello\n"
MCP_KEY = "path"
MCP_VALUE = "\ud800 alone"


async def write_surrogate_session(store: EventStore) -> UUID:
    """The session (no owner: an admin's token reads it); returns its id."""
    recorder = Recorder(store)
    await recorder.start(TASK)
    [run] = await recorder.call(("execute_bash", {"command": COMMAND}), content=REPLY)
    await recorder.output(run, OUTPUT)
    [call] = await recorder.append(
        McpCall(server="files", tool="stat", arguments={MCP_KEY: MCP_VALUE})
    )
    await recorder.append(McpResult(content=[{"type": "text", "text": OUTPUT}], cause=call.seq))
    await recorder.call(("finish", {"message": "renamed caf\udce9.txt"}))
    return recorder.session
