"""`chronicle run` / `resume` as a user runs them: subprocesses against the fake model server."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.support.cli import cli_environment
from tests.support.fake_llm import FakeLlmServer
from tests.support.forked import chronicle_popen


def agent_environment(
    fake: FakeLlmServer | None, database_url: str | None, tmp_path: Path, **extra: str
) -> dict[str, str]:
    """The command's environment: the database (None: the embedded one in tmp_path's data
    dir), the fake model as ``openai/fake-model`` with a key, quick polls; ``extra`` on top."""
    env = cli_environment(database_url or "", tmp_path)
    if database_url is None:
        del env["CHRONICLE_DATABASE_URL"]
    if fake is not None:
        env |= {
            "CHRONICLE_LLM_MODEL": "openai/fake-model",
            "CHRONICLE_LLM_BASE_URL": fake.base_url,
            "CHRONICLE_LLM_API_KEY": "sk-fake",
            "CHRONICLE_LLM_NATIVE_TOOL_CALLING": "true",
        }
    env["CHRONICLE_POLL_INTERVAL"] = "0.5"
    return env | extra


def start(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.Popen[str]:
    """``chronicle ARGS`` running in the background, its output captured."""
    return chronicle_popen(
        list(args), env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def file_says(path: Path, text: str) -> Callable[[], bool]:
    return lambda: path.exists() and text in path.read_text()


def process_with_argument(argument: str) -> list[int]:
    """Pids of live processes with ``argument`` on their command line (a unique marker)."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "cmdline", "status"]):
        if process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if argument in (process.info["cmdline"] or []):
            found.append(process.info["pid"])
    return found


def without_model_keys(env: dict[str, str]) -> dict[str, str]:
    """No key in any variable a provider SDK would read on its own."""
    return {
        name: value
        for name, value in env.items()
        if name != "CHRONICLE_LLM_API_KEY" and not name.endswith("_API_KEY")
    }
