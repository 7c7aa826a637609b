"""A `chronicle` process forked by the tests' fork server (tests/support/forked.py) is the
process a fresh interpreter would be: the same output, exit status, signals' effect, working
directory and environment. The system tests start their commands that way; were a fork to
differ, their passing would say less than they claim."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support.cli import cli_environment
from tests.support.forked import ForkedPopen, chronicle_popen, chronicle_run, forking

pytestmark = pytest.mark.skipif(not forking(), reason="CHRONICLE_TEST_FORK=0: nothing forks")


@pytest.fixture
def env(app_database_url: str, tmp_path: Path) -> dict[str, str]:
    return cli_environment(app_database_url, tmp_path)


def both(args: list[str], env: dict[str, str], **kwargs: object) -> list[tuple[int, str, str]]:
    """The command's (status, stdout, stderr) forked, then fresh."""
    ran = []
    for fresh in (False, True):
        done = chronicle_run(
            args, env=env, capture_output=True, text=True, timeout=120, fresh=fresh, **kwargs
        )
        ran.append((done.returncode, done.stdout, done.stderr))
    return ran


def test_a_fork_answers_as_a_fresh_process(env: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    process = chronicle_popen(["--help"], env=env, stdout=subprocess.PIPE, text=True)
    process.communicate(timeout=60)
    assert isinstance(process, ForkedPopen)
    assert chronicle_run(
        ["append", session, "message", '{"content": "x"}'], env=env, capture_output=True
    ).returncode == 0  # fmt: skip
    for args in (
        ["--help"],
        ["nonsense"],  # a usage error: status 2
        ["events", "abc"],  # not a session id: 2
        ["events", str(uuid.uuid4())],  # no events: 1, one sentence
        ["events", session, "--json"],
        ["verify", session],
    ):
        forked, fresh = both(args, env)
        assert forked == fresh, args
    # an uncaught exception prints its traceback and ends 1, as an interpreter does
    forked, fresh = both(["events", session], {**env, "CHRONICLE_CONFIG": "/"})
    assert forked[0] == fresh[0] != 0
    assert forked[2] == fresh[2]


def test_its_working_directory_and_environment_are_the_callers(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "chronicle.toml").write_text("this is = not toml [")
    # the settings file named relative to the working directory, in a variable of the call's
    forked, fresh = both(
        ["sessions"], {**env, "CHRONICLE_CONFIG": "chronicle.toml"}, cwd=tmp_path / "here"
    )
    assert forked == fresh
    assert forked[0] != 0 and "chronicle.toml" in forked[2]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_ends_a_fork_as_it_ends_a_fresh_process(
    env: dict[str, str], sig: signal.Signals
) -> None:
    session = str(uuid.uuid4())
    chronicle_run(["append", session, "message", '{"content": "x"}'], env=env, check=True)
    ended = []
    for fresh in (False, True):
        follower = chronicle_popen(
            ["events", session, "--follow", "--json"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, fresh=fresh,
        )  # fmt: skip
        assert follower.stdout is not None
        assert json.loads(follower.stdout.readline())["payload"]["content"] == "x"
        follower.send_signal(sig)
        _, err = follower.communicate(timeout=60)
        # the pid and the status are the command's own
        ended.append((follower.returncode, re.sub(r"\d+", "N", err)))
    assert ended[0] == ended[1]


def test_a_timeout_kills_the_fork_and_says_so(env: dict[str, str]) -> None:
    session = str(uuid.uuid4())
    chronicle_run(["append", session, "message", '{"content": "x"}'], env=env, check=True)
    with pytest.raises(subprocess.TimeoutExpired):
        chronicle_run(["events", session, "--follow"], env=env, capture_output=True, timeout=3)
    follower = chronicle_popen(["events", session, "--follow"], env=env, stdout=subprocess.PIPE)
    assert follower.poll() is None
    follower.kill()
    assert follower.wait(timeout=30) == -signal.SIGKILL
