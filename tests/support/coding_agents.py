"""mini-swe-agent, a coding agent from PyPI, as a real client of the model gateway: where
``scripts/ensure-test-venv agents`` installs it (a virtualenv of its own, so its pins never meet
ours), the environment that runs it without a person, a small repository whose test fails on
an off-by-one, and the replies of a scripted model that fix it in three steps.

mini calls its model through litellm (``openai/<name>`` reads ``OPENAI_BASE_URL`` and
``OPENAI_API_KEY``, which ``chronicle record`` sets) with one ``bash`` tool, runs each command
it is given in a subshell of its working directory, and stops when a command's output starts
with its finishing line."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.fake_llm import Reply, tool_call
from tests.support.venvs import installed_venv

#: The first line of mini's default configuration (``mini.yaml``): its system prompt.
SYSTEM_PROMPT = "You are a helpful assistant that can interact with a computer."
TASK = "test_calc.py fails: fix calc.py"
#: The tests' verdict alone (unittest's timing line would differ from run to run, and a
#: command's output goes back to the model: a replay must see the same bytes).
RUN_TESTS = "python -m unittest -q 2>&1 | tail -n 1"
FINISH = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

CALC = 'def total(n):\n    """The sum of 1..n."""\n    return sum(range(1, n))\n'
TEST_CALC = (
    "import unittest\n\nfrom calc import total\n\n\n"
    "class TotalTest(unittest.TestCase):\n"
    "    def test_total(self):\n"
    "        self.assertEqual(total(3), 6)\n"
)


def mini_path(wait: float = 900.0) -> Path:
    """The installed ``mini``, once a background install of it has ended (at most ``wait``
    seconds); a skip (a failure under CI) when it is not there."""
    return installed_venv("agents", wait) / "bin" / "mini"


def mini_command(config: Path | None = None) -> list[str]:
    """``mini`` run to its end without a person: every command without asking (``-y``), no
    question when it finishes, the model the deployment's (``openai/`` is litellm's OpenAI
    protocol); its own ``mini.yaml`` unless ``config`` names another file."""
    chosen = ["-c", str(config)] if config is not None else []
    return [str(mini_path()), *chosen, "-y", "--exit-immediately",
            "-m", "openai/scripted", "-t", TASK]  # fmt: skip


def mini_environment(base: dict[str, str], home: Path) -> dict[str, str]:
    """``base`` with mini's settings: no first-run questions, its global settings and last
    trajectory in ``home`` (not the user's), no cost error for a model litellm has no price
    for, litellm's price list read from its package (not fetched), one attempt per call (a
    model that cannot be reached fails the run at once, not after ten waits), and no
    ``__pycache__`` left in the repository by the tests it runs."""
    return {
        **base,
        "MSWEA_CONFIGURED": "true",
        "MSWEA_GLOBAL_CONFIG_DIR": str(home),
        "MSWEA_COST_TRACKING": "ignore_errors",
        "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def builtin_config() -> Path:
    """mini's own ``mini.yaml``, as installed."""
    agents = installed_venv("agents")
    found = sorted(agents.glob("lib/python*/site-packages/minisweagent/config/mini.yaml"))
    assert found, f"no minisweagent/config/mini.yaml under {agents}"
    return found[0]


def config_with_one_byte_changed(directory: Path) -> Path:
    """A copy of ``mini.yaml`` whose system prompt ends in ``!`` instead of ``.``: one byte."""
    text = builtin_config().read_text()
    assert text.count(SYSTEM_PROMPT) == 1, "mini.yaml's system prompt changed"
    changed = directory / "mini-changed.yaml"
    changed.write_text(text.replace(SYSTEM_PROMPT, SYSTEM_PROMPT[:-1] + "!"))
    assert len(changed.read_bytes()) == len(text.encode())
    return changed


def make_repository(path: Path) -> Path:
    """A git repository with ``calc.total`` off by one and the unittest that shows it."""
    path.mkdir(parents=True)
    (path / "calc.py").write_text(CALC)
    (path / "test_calc.py").write_text(TEST_CALC)
    git = shutil.which("git")
    assert git is not None, "git is needed"
    for args in (["init", "-q"], ["add", "."]):
        subprocess.run([git, *args], cwd=path, check=True)
    subprocess.run(
        [git, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "total"],
        cwd=path,
        check=True,
    )
    return path


def unittest_passes(path: Path) -> bool:
    """Whether the repository's tests pass (with this Python, outside any agent)."""
    ran = subprocess.run(
        [sys.executable, "-B", "-m", "unittest", "-q"], cwd=path, capture_output=True, text=True
    )
    return ran.returncode == 0


def fixing_replies() -> list[Reply]:
    """The model's three steps: run the tests, fix the range and run them again, finish."""
    fix = "sed -i 's/range(1, n)/range(1, n + 1)/' calc.py && " + RUN_TESTS
    steps = [("Run the tests first.", RUN_TESTS), ("range stops before n: include n.", fix),
             ("The tests pass.", FINISH)]  # fmt: skip
    return [Reply(content=why, tool_calls=[tool_call("bash", command=what)]) for why, what in steps]
