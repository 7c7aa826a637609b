"""Arize Phoenix (``arize-phoenix`` from PyPI, scripts/test-venvs/phoenix.txt), an
OpenTelemetry backend for LLM traces that nobody here wrote, as a real OTLP/HTTP receiver:
``phoenix serve`` from ``.venv-phoenix`` on free loopback ports, its sqlite database in a
directory of the test's, offline (no telemetry, no fonts or scripts from the internet); the
spans it stored read back through its own REST API.

Phoenix takes OTLP/HTTP protobuf on its one HTTP port (``/v1/traces``, beside its UI and API)
and files a trace under the project its ``x-project-name`` header names (else the resource's
``openinference.project.name``, else ``default``). It answers 200 at once and stores the
spans afterwards, in the order it got them (about 65 spans a second here): a reader polls.
``GET /v1/projects/{project}/spans?trace_id=...`` gives them back as ``{"data": [...]}``,
each with its ``context`` (hex ``trace_id``, ``span_id``), ``parent_id``, ``span_kind``
(OpenInference's: AGENT, LLM, TOOL), ``status_code`` and ``status_message``, and its
``attributes`` as one flat mapping: the ones sent, with their types, and the OpenInference
ones Phoenix derived from the GenAI conventions' (``llm.*``, ``tool.*``, ``session.id``).
It starts in 12 to 55 s on 2 cores (13 s of it imports), so a test file starts it once. Its
OTLP/gRPC receiver always starts too, on every interface (Phoenix binds ``[::]``): a free
port, for the test's time only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.support.waiting import until

#: Seconds a start may take before it is a failure (imports and migrations on 2 busy cores).
START_TIMEOUT = 240.0
#: Starts tried when the free ports picked were taken meanwhile by another process.
START_ATTEMPTS = 3


def phoenix_environment(workdir: Path, port: int, grpc_port: int) -> dict[str, str]:
    """Phoenix's settings: its database and files in ``workdir``, on 127.0.0.1 only, its HTTP
    (UI, API, OTLP/HTTP) and OTLP/gRPC ports, nothing sent to or fetched from the internet.
    The rest of this process's environment, but none of its Python or Phoenix settings."""
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PHOENIX_", "OTEL_", "PYTHON")) and name != "VIRTUAL_ENV"
    }
    return {
        **inherited,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_LOG_MIGRATIONS": "false",
        # a receiver only: no assistant (its /chat endpoint, its server-side bash tool)
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
    }


@dataclass
class Phoenix:
    """A running ``phoenix serve``: its URL and its log."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def traces_url(self) -> str:
        """Where OTLP/HTTP goes (``chronicle export --otlp`` adds ``/v1/traces`` itself)."""
        return f"{self.url}/v1/traces"

    def log_tail(self, chars: int = 6000) -> str:
        """The end of what the server wrote (for a failure's message)."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return text[-chars:]

    async def spans(self, project: str, trace_id: str) -> list[dict[str, Any]]:
        """The spans of the trace (hex id) Phoenix has stored under ``project`` so far (none
        while the project does not exist: Phoenix makes it with its first span)."""
        found: list[dict[str, Any]] = []
        params: dict[str, str | int] = {"trace_id": trace_id, "limit": 1000}
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as client:
            while True:
                answer = await client.get(f"/v1/projects/{project}/spans", params=params)
                if answer.status_code == 404:
                    return []
                assert answer.status_code == 200, answer.text
                page = answer.json()
                found += page["data"]
                if not page.get("next_cursor"):
                    return found
                params["cursor"] = page["next_cursor"]

    async def session(self, session_id: str) -> dict[str, Any]:
        """Phoenix's session of that id (the ``session.id`` it derives from
        ``gen_ai.conversation.id``): its traces and the tokens of its model calls."""
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as client:
            answer = await client.get(f"/v1/sessions/{session_id}")
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()["data"]
        return found

    async def delete_trace(self, trace_id: str) -> None:
        """Delete the trace (hex id) with all its spans."""
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as client:
            answer = await client.delete(f"/v1/traces/{trace_id}")
        assert answer.status_code == 204, answer.text

    async def wait_for_spans(
        self, project: str, trace_id: str, count: int, *, timeout: float = 60
    ) -> list[dict[str, Any]]:
        """The trace's spans once Phoenix has stored ``count`` of them (it answers the export
        first and stores afterwards); fails with its log when it does not within ``timeout``."""
        found: list[dict[str, Any]] = []

        async def stored() -> bool:
            nonlocal found
            found = await self.spans(project, trace_id)
            return len(found) >= count

        try:
            await until(
                stored,
                timeout=timeout,
                interval=0.2,
                what=f"{count} spans of trace {trace_id} in Phoenix's project {project}",
            )
        except AssertionError as failed:
            raise AssertionError(
                f"{failed} (it has {len(found)}); Phoenix's log ends:\n{self.log_tail()}"
            ) from None
        return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running_phoenix(venv: Path, workdir: Path) -> Iterator[Phoenix]:
    """``phoenix serve`` of ``venv`` with its data in ``workdir``, once ``/healthz`` answers;
    stopped at the end (SIGTERM, then SIGKILL after 15 s). A failed start raises with the end
    of its log; a start that lost its ports to another process is tried again on others."""
    for attempt in range(1, START_ATTEMPTS + 1):
        log = workdir / f"phoenix-{attempt}.log"
        port, grpc_port = free_port(), free_port()
        with log.open("wb") as output:
            process = subprocess.Popen(
                [str(venv / "bin" / "phoenix"), "serve"],
                env=phoenix_environment(workdir, port, grpc_port),
                cwd=workdir, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C of the test run is the fixture's to pass on
            )  # fmt: skip
        phoenix = Phoenix(url=f"http://127.0.0.1:{port}", process=process, log=log)
        try:
            if _healthy(phoenix):
                yield phoenix
                return
        finally:
            _stop(process)
        if "bind" not in phoenix.log_tail().lower():  # uvicorn's, or gRPC's "Failed to bind"
            break
    raise AssertionError(
        f"phoenix serve did not start (exit {process.returncode}); its log ends:\n"
        f"{phoenix.log_tail()}"
    )


def _healthy(phoenix: Phoenix) -> bool:
    """Whether the server answers ``/healthz`` before it exits (False) or ``START_TIMEOUT``
    passes (a failure naming the end of its log)."""
    deadline = time.monotonic() + START_TIMEOUT
    while phoenix.process.poll() is None:
        try:
            if httpx.get(f"{phoenix.url}/healthz", timeout=2).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(
                f"phoenix serve did not answer /healthz within {START_TIMEOUT} s; its log "
                f"ends:\n{phoenix.log_tail()}"
            )
        time.sleep(0.25)  # a process's start, which sends no notification
    return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
