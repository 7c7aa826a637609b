"""A real `chronicle serve` process for system tests, and the tokens to call it with."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from app.projections.session_state import WORKING_STATES
from app.sessions.sql.users import UserExistsError
from tests.support.cli import chronicle, cli_environment, in_process
from tests.support.forked import chronicle_popen
from tests.support.postgres import PgServer, database_name

LISTENING = re.compile(r"chronicle serving on (http://\S+)")


@dataclass
class ServerProcess:
    """A started ``chronicle serve``: its URL, its environment, and its output so far.

    Its output is read all the time by a thread of its own: a server writing to a pipe nobody
    reads blocks once the pipe's 64 KiB are full (in the middle of a log line, inside the
    event loop), which looked like a server that would not stop.
    """

    process: subprocess.Popen[str]
    url: str
    env: dict[str, str]
    output: list[str] = field(default_factory=list)
    _reader: threading.Thread | None = None

    def __post_init__(self) -> None:
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()

    def _read_output(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)

    def rest_of_output(self) -> str:
        """Everything the server wrote, once it has exited."""
        if self._reader is not None:
            self._reader.join(timeout=10)
        return "".join(self.output)

    def token(self, user: str, *, admin: bool = False, expires: str | None = None) -> str:
        """A new API token for ``user`` (added first if new), made by the CLI's own handlers
        (``chronicle users add`` and ``tokens create``) in this process: the system tests ask
        for ~140 tokens, and two Python starts a token were minutes of the suite's CPU. The
        commands themselves run as processes in the tests of them."""
        try:
            in_process(self.env, "users", "add", user, *(["--admin"] if admin else []))
        except UserExistsError:
            pass
        made = in_process(
            self.env, "tokens", "create", user, *(["--expires", expires] if expires else [])
        )
        return made.strip()

    def sign_in_path(self, token: str) -> str:
        """A one-time sign-in link (``/login#code=...``, the path only) for the user whose
        token this is, made by the CLI as an operator makes it: what a browser test opens."""
        user = httpx.get(f"{self.url}/api/me", headers={"Authorization": f"Bearer {token}"})
        assert user.status_code == 200, user.text
        made = chronicle("login-link", user.json()["user"], "--url", self.url, env=self.env)
        assert made.returncode == 0, made.stderr
        return made.stdout.strip().removeprefix(self.url)

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def database_environment(
    pg_server: PgServer, admin_url: str, root: Path, **settings: str
) -> dict[str, str]:
    """A server's environment for the database at ``admin_url`` (its superuser's URL)."""
    env = cli_environment(pg_server.app.url(database_name(admin_url)), root)
    # the operator's login, which `chronicle users` and `tokens` use (the server never does)
    env["CHRONICLE_OWNER_DATABASE_URL"] = admin_url
    env["CHRONICLE_LLM_MODEL"] = "openai/scripted"
    env["CHRONICLE_LLM_BASE_URL"] = "http://127.0.0.1:9/v1"  # nothing listens
    env["CHRONICLE_LLM_API_KEY"] = "sk-not-used"
    # a session the server's worker runs against no model fails at once, so that a
    # SIGTERM's drain (the step in flight finishes) does not wait on retries
    env["CHRONICLE_LLM_RETRIES"] = "0"
    env["CHRONICLE_LLM_TIMEOUT"] = "10"
    env.update({f"CHRONICLE_{name.upper()}": value for name, value in settings.items()})
    return env


def start_server(
    env: dict[str, str], *args: str, cwd: Path | None = None, timeout: float = 60
) -> ServerProcess:
    """Start ``chronicle serve --port 0`` and wait for the line that names its URL."""
    process = chronicle_popen(
        ["serve", "--port", "0", *args],
        env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    os.set_blocking(process.stdout.fileno(), True)
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        found = LISTENING.search(line)
        if found:
            return ServerProcess(process=process, url=found.group(1), env=env, output=lines)
    process.kill()
    process.wait()
    raise AssertionError("chronicle serve did not start:\n" + "".join(lines))


def start_worker(env: dict[str, str]) -> subprocess.Popen[str]:
    """Start ``chronicle serve --role worker`` (no HTTP) and wait for its ``running`` line."""
    process = chronicle_popen(
        ["serve", "--role", "worker"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    os.set_blocking(process.stdout.fileno(), True)
    line = process.stdout.readline()
    assert "running" in line, line
    # Read the rest so its logging never blocks on a full pipe (see ``ServerProcess``).
    threading.Thread(target=process.stdout.read, daemon=True).start()
    return process


def wait_until_run_ended(
    url: str, headers: dict[str, str], session: str, timeout: float = 60
) -> None:
    """Until the session's run has ended (its last ``agent.state`` is not a working one).

    A test that signals a server whose worker runs a session lets the run end first: against
    no model it fails at once, but importing litellm and starting its sandbox take seconds on
    a loaded machine, and a SIGTERM then waits for that step (the worker's drain), which is
    not what a test of streams or of half-sent requests measures.
    """
    deadline = time.monotonic() + timeout
    while True:
        page = httpx.get(f"{url}/api/sessions/{session}/events", headers=headers).json()
        states = [e["payload"]["state"] for e in page["events"] if e["kind"] == "agent.state"]
        if states and states[-1] not in WORKING_STATES:  # "loading" is not an end either
            return
        assert time.monotonic() < deadline, f"the run of session {session} never ended"
        time.sleep(0.2)
