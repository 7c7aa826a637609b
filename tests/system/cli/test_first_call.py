"""Importing litellm (seconds) is not the first model call's latency: the runner imports it in
the background while the sandbox starts, and the gateway waits for it before its clock starts.

Before, the first call's ``latency_ms`` held the whole import: several seconds for a local
model that answered in milliseconds.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from app.store import EventStore
from tests.support.agent_cli import agent_environment
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call


def import_seconds() -> float:
    """How long a fresh interpreter takes to import litellm here and now."""
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", "import litellm"],
        env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"}, check=True, timeout=300,
    )  # fmt: skip
    return time.monotonic() - started


@pytest.mark.slow
async def test_the_first_call_does_not_count_importing_litellm(
    store: EventStore, fake_llm: FakeLlmServer, app_database_url: str, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="done")]))
    env = agent_environment(fake_llm, app_database_url, tmp_path)
    session = str(uuid.uuid4())
    done = chronicle(
        "run", "--workspace", str(workspace), "--session", session, "Hi.",
        env=env, timeout=300, fresh=True,  # a fresh interpreter: the import is what is measured
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [call] = [e.payload for e in await store.read(uuid.UUID(session)) if e.kind == "llm.call"]
    importing = import_seconds()
    assert call["latency_ms"] < importing * 1000 / 2, (call["latency_ms"], importing)
