"""Payloads PostgreSQL cannot hold as they are (NUL, lone surrogates) and long ones (blobs),
as sessions the store tests record and read back."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from app.events import Event, FileEdit, McpCall, Message, Run, RunOutput

BIG = "x" * 1_200_000  # a 1.2 MB file text
OUTPUT = "".join(f"line {i} of a long build log\n" for i in range(180_000))  # ~5 MB
SHA = "ab" * 32  # a key that looks like a blob's


def sha256_hex(text: str) -> str:
    """A blob's key: the sha256 of its UTF-8 text."""
    return hashlib.sha256(text.encode()).hexdigest()


#: Each case: the events of a session, appended in one batch (new event ids each time).
CASES: dict[str, Callable[[], list[Event]]] = {
    "nul in content": lambda: [Message(content="before\x00after")],
    "nul in keys": lambda: [McpCall(server="s", tool="t", arguments={"k\x00ey": "v", "plain": 1})],
    "lone surrogates": lambda: [
        Run(command="cat caf\udce9.txt"),
        McpCall(server="s", tool="t", arguments={"caf\udce9": ["\ud800", {"x": "\udfff"}]}),
    ],
    # Keys as sent, at any depth (pydantic's JSON mode replaced or refused them: free_keys).
    "lone surrogates in keys": lambda: [
        McpCall(server="s", tool="t", arguments={"k\udce9": {"n\ud800": [{"\udfff": 1}]}}),
    ],
    "looks like a marker": lambda: [
        McpCall(
            server="s",
            tool="t",
            arguments={
                "$blob": SHA,
                "chars": 3,
                "nested": {"$esc": "caf\\udce9"},
                "pairs": {"$obj": [["a", 1]]},
                "text": '{"$blob": "' + SHA + '", "chars": 3}',
            },
        )
    ],
    "a 1.2 MB create": lambda: [FileEdit(command="create", path="/w/big.txt", file_text=BIG)],
    "a 5 MB command output": lambda: [
        Run(command="make"),
        RunOutput(output=OUTPUT, exit_code=0, cause=1),
    ],
    "one blob for equal strings": lambda: [
        McpCall(server="s", tool="t", arguments={"a": BIG, "b": [BIG, {"c": BIG}]})
    ],
    "a long string with NUL": lambda: [Message(content=("bin\x00ary\udce9" * 20_000))],
}
