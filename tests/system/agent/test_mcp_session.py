"""MCP results in a whole session: an image reaches the model as an image part, structured
content is recorded, and the server's stderr stays out of the terminal."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.mcp_echo_server import STARTED, stdio_config, tiny_png


async def test_an_image_result_reaches_the_model_as_an_image_part(
    store: EventStore,
    fake_llm: FakeLlmServer,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Before: the image block went to the model as JSON text holding its base64 data, and
    ``structuredContent`` was dropped."""
    fake_llm.script(
        Reply(tool_calls=[tool_call("echo__picture"), tool_call("echo__weather", city="Oslo")]),
        Reply(tool_calls=[tool_call("finish", message="saw it")]),
    )
    settings = settings_for(fake_llm, tmp_path)
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=tmp_path / "ws", mcp_servers=[stdio_config()]),
        task="Look at the picture and the weather.",
    )  # fmt: skip
    assert outcome == "finished"
    events = await store.read(session)
    picture, weather = [e.payload for e in events if e.kind == "mcp.result"]
    data = base64.b64encode(tiny_png()).decode()
    assert picture["content"] == [{"type": "image", "data": data, "mimeType": "image/png"}]
    assert weather["structured_content"] == {"city": "Oslo", "celsius": 21.5}

    messages = fake_llm.requests[1]["messages"]
    tools = [m for m in messages if m["role"] == "tool"]
    assert tools[0]["content"] == "[image (image/png): shown below]"
    assert json.loads(tools[1]["content"]) == {"city": "Oslo", "celsius": 21.5}
    assert all(data not in m["content"] for m in tools)  # no base64 text for the model
    images = messages[messages.index(tools[-1]) + 1]
    assert images["role"] == "user"
    assert images["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{data}"},
    }
    # The server's stderr went to the session's log, not the terminal.
    log = settings.data_dir / "logs" / str(session) / "mcp-echo.log"
    assert STARTED in log.read_text()
    terminal = capfd.readouterr()
    assert STARTED not in terminal.err + terminal.out
