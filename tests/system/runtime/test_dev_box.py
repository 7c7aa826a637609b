"""The Docker sandbox is a usable dev box: the tools recorded agents call are there.

Before: the base image had ``python3`` but no ``python`` (agents call ``python``), no
``pip`` and no ``patch``. The local sandbox runs the host's own tools (its jail mounts the
host's ``/usr``), so what it has is up to the host; this is about the image we build.
"""

from __future__ import annotations

import pytest

from app.events import Run, RunOutput
from app.runtime import Runtime


async def run(runtime: Runtime, command: str) -> RunOutput:
    result = await runtime.execute(Run(command=command, timeout=120))
    assert isinstance(result, RunOutput), result
    return result


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("python --version", "Python 3."),
        ("pip --version", "python 3."),
        ("git --version", "git version"),
        ("patch --version", "GNU patch"),
        ("curl --version", "curl "),
        ("grep --version", "GNU grep"),
        ("find --version", "GNU findutils"),
        ("sed --version", "GNU sed"),
    ],
)
async def test_the_tools_are_there(docker_runtime: Runtime, command: str, says: str) -> None:
    result = await run(docker_runtime, command)
    assert result.exit_code == 0 and says in result.output, result.output


async def test_a_patch_applies_and_pip_installs_a_local_package(docker_runtime: Runtime) -> None:
    """The tools work for the sandbox's unprivileged user on a read-only root, offline."""
    runtime = docker_runtime
    made = await run(
        runtime,
        "mkdir -p tiny/tiny && echo 'ANSWER = 41' > tiny/tiny/__init__.py && "
        'printf \'[project]\\nname = "tiny"\\nversion = "1.0"\\n\' > tiny/pyproject.toml && '
        "git init -q tiny && git -C tiny add -A && echo made",
    )
    assert made.output.strip().endswith("made"), made.output
    diff = (
        "--- a/tiny/__init__.py\n+++ b/tiny/__init__.py\n@@ -1 +1 @@\n-ANSWER = 41\n+ANSWER = 42\n"
    )
    patched = await run(runtime, f"cd tiny && patch -p1 <<'EOF'\n{diff}EOF\ncd ..")
    assert patched.exit_code == 0, patched.output
    installed = await run(
        runtime, "pip install --no-index --no-build-isolation ./tiny 2>&1 | tail -1"
    )
    assert "Successfully installed tiny" in installed.output, installed.output
    imported = await run(runtime, "cd / && python -c 'import tiny; print(tiny.ANSWER)'")
    assert imported.output.strip() == "42", imported.output
