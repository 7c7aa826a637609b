"""Chronicle as a user installs it: `pip install` of the built wheel (not editable) into a
fresh virtual environment, used from a directory outside the checkout with a fresh data dir.

The migrations, alembic's configuration and runtime_image/ must come from the installed
package (importlib.resources). Before, they were looked up beside the source tree
(``Path(__file__).parents[2]``), which in site-packages is the environment's lib directory:
`chronicle db up` found no alembic.ini and a Docker session no image to build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.repository import ROOT

SHIPPED = (
    "app/migrations/alembic.ini",
    "app/migrations/env.py",
    "app/migrations/script.py.mako",
    "app/migrations/versions/0001_event_store.py",
    "app/migrations/helpers.py",
    "app/migrations/sql/schema.sql",
    "app/migrations/sql/functions/chronicle_append.sql",
    "app/migrations/sql/views/agent_states.sql",
    "app/runtime_image/Dockerfile",
    "app/runtime_image/.dockerignore",
    "app/runtime_image/chronicle_sandbox/__main__.py",
    "app/runtime_image/chronicle_sandbox/server.py",
)


def run(*command: str | Path, cwd: Path | None = None, timeout: float = 600) -> str:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def source_copy(destination: Path) -> Path:
    """The checkout's files (tracked, and new ones not ignored) as a user would have them:
    building there leaves nothing behind in the checkout."""
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def session_in(output: str) -> str:
    found = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", output)
    assert found, output
    return found.group()


@pytest.mark.slow
def test_the_installed_wheel_migrates_records_verifies_and_runs_sandboxes(
    docker_ready: None, fake_llm: FakeLlmServer, data_dir: Path, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", wheels,
        source_copy(tmp_path / "source"))  # fmt: skip
    [wheel] = wheels.glob("chronicle-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(SHIPPED) <= names, sorted(set(SHIPPED) - names)

    # Beside the data dir, out of pytest's root: as root, the server's own user must reach the
    # PostgreSQL binaries pgserver installs in this environment.
    venv = data_dir.parent / "venv"
    run(sys.executable, "-m", "venv", venv)
    # The dependencies come from the package index (or uv's cache): the wheel's own metadata
    # must name every one the code imports. uv resolves and installs what pip would (the same
    # releases) in seconds where pip takes minutes. --native-tls: the system's certificates,
    # as pip uses them (uv's own set does not know a proxy's authority).
    python = venv / "bin" / "python"
    run(sys.executable, "-m", "uv", "pip", "install", "--quiet", "--native-tls",
        "--python", python, wheel, timeout=1500)  # fmt: skip

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    settings = tmp_path / "chronicle.toml"
    settings.touch()
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("CHRONICLE_") and name not in ("PYTHONPATH", "VIRTUAL_ENV")
    } | {
        "CHRONICLE_DATA_DIR": str(data_dir),
        "CHRONICLE_CONFIG": str(settings),
        "CHRONICLE_LLM_MODEL": "openai/fake-model",
        "CHRONICLE_LLM_BASE_URL": fake_llm.base_url,
        "CHRONICLE_LLM_API_KEY": "sk-fake",
        "CHRONICLE_LLM_NATIVE_TOOL_CALLING": "true",
    }
    if "CHRONICLE_SANDBOX_BASE_IMAGE" in os.environ:
        env["CHRONICLE_SANDBOX_BASE_IMAGE"] = os.environ["CHRONICLE_SANDBOX_BASE_IMAGE"]

    def chronicle(*args: str) -> str:
        done = subprocess.run(
            [str(venv / "bin" / "chronicle"), *args],
            cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, f"chronicle {args}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    where = run(venv / "bin" / "python", "-c", "import app; print(app.__file__)", cwd=elsewhere)
    assert Path(where.strip()).is_relative_to(venv)

    up = chronicle("db", "up")
    head = sorted(name for name in names if name.startswith("app/migrations/versions/0"))[-1]
    assert "database ready (embedded)" in up
    assert f"schema revision: {Path(head).name[:4]}" in up
    session = session_in(chronicle("demo"))
    assert chronicle("verify", session).startswith("ok: 8 events")

    for runtime in ("local", "docker"):
        workspace = elsewhere / f"project-{runtime}"
        workspace.mkdir()
        fake_llm.script(
            Reply(tool_calls=[tool_call("execute_bash", command="python3 -c 'print(6 * 7)' > a")]),
            Reply(tool_calls=[tool_call("finish", message="done")]),
        )
        done = chronicle("run", "--runtime", runtime, "--workspace", str(workspace), "Compute.")
        assert ": finished" in done.splitlines()[-1], done
        assert (workspace / "a").read_text() == "42\n"
