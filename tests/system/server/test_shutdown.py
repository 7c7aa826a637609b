"""A server given SIGTERM while it is busy exits within a few seconds: with live streams (SSE
and WebSocket), an idle keep-alive connection, a request whose body never finishes arriving,
and a session its worker ran.

Before, uvicorn's graceful timeout was 10 s, and a request still waiting for its body (a
client that never finishes sending it) held the exit that long: this test measured 11.4 s.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import psutil
from websockets.sync.client import connect

from app.evaluation.api_runs import trial_session_id
from tests.support.chronicle_server import ServerProcess, wait_until_run_ended
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

#: What "a few seconds" means here (uvicorn's graceful timeout alone was 10 s).
EXIT_WITHIN = 8.0


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_sigterm_with_streams_idle_and_half_sent_requests_exits_within_seconds(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve()
    token = server.token("ada")
    headers = bearer(token)
    host, port = urlsplit(server.url).hostname, urlsplit(server.url).port
    assert host is not None and port is not None
    session = httpx.post(
        f"{server.url}/api/sessions", headers=headers, json={"task": "hold on"}
    ).json()["id"]
    # The worker runs it and it fails at once (no model listens): ended before the SIGTERM, so
    # the exit is not held by the drain of a session still starting (importing litellm and
    # starting its sandbox took long enough on a loaded machine to make this test 19.9 s).
    wait_until_run_ended(server.url, headers, session)

    # an SSE stream, read in a thread until the server ends it
    sse_ready = threading.Event()

    def follow() -> None:
        with (
            httpx.Client(timeout=60) as client,
            client.stream(
                "GET",
                f"{server.url}/api/sessions/{session}/stream",
                headers={**headers, "Accept": "text/event-stream"},
            ) as response,
        ):
            sse_ready.set()
            for _ in response.iter_lines():
                pass

    sse = threading.Thread(target=follow, daemon=True)
    sse.start()
    assert sse_ready.wait(30)
    streams = contextlib.ExitStack()
    streams.enter_context(
        connect(
            f"ws://{host}:{port}/api/sessions/{session}/stream",
            additional_headers=headers,
            open_timeout=30,
        )
    )
    # an idle keep-alive connection, and a request whose body never finishes arriving
    idle = socket.create_connection((host, port))
    idle.sendall(f"GET /health/live HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    assert idle.recv(4096).startswith(b"HTTP/1.1 200")
    half = socket.create_connection((host, port))
    half.sendall(
        f"POST /api/sessions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"task": '.encode()
    )
    time.sleep(1)
    try:
        started = time.monotonic()
        code = server.stop(timeout=60)
        took = time.monotonic() - started
        assert took < EXIT_WITHIN, f"the server took {took:.1f} s to exit"
        assert code == 0, "".join(server.output)
    finally:
        for connection in (idle, half):
            connection.close()
        streams.close()
        sse.join(timeout=10)


#: The check's marker: a process of this command line runs while the trial is scored.
CHECK_SLEEP = "300.5"


def test_sigterm_while_the_worker_scores_a_trial_exits_after_the_drain_timeout(
    serve: Callable[..., ServerProcess], fake_llm: FakeLlmServer
) -> None:
    """The drain's deadline stops the after-run work too (here an evaluation trial's check,
    which runs up to ten minutes); the trial is left unscored for a worker's sweep. Before,
    the deadline cancelled runs only, and the shutdown waited for the check: the stop below
    timed out after 60 s."""
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="42")]))
    server = serve(llm_base_url=fake_llm.base_url, runtime="local", worker_drain_timeout="2")
    headers = bearer(server.token("ada"))
    suite = {
        "name": "slow",
        "tasks": [{"id": "slow", "prompt": "Six times seven?", "answer": "42",
                   "check": f"sleep {CHECK_SLEEP}"}],
    }  # fmt: skip
    started = httpx.post(
        f"{server.url}/api/evaluations", headers=headers, json={"name": "slow", "suite": suite}
    )
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + 120
    while not any(
        process.info["cmdline"] == ["sleep", CHECK_SLEEP]
        for process in psutil.process_iter(["cmdline"])
    ):
        assert time.monotonic() < deadline, "the trial's check never started"
        time.sleep(0.1)
    session = trial_session_id(started.json()["key"], "slow", 1)
    events = httpx.get(f"{server.url}/api/sessions/{session}/events", headers=headers).json()
    assert not [e for e in events["events"] if e["kind"] == "eval.score"]

    begun = time.monotonic()
    code = server.stop(timeout=60)
    took = time.monotonic() - begun
    assert code == 0, "".join(server.output)
    assert took < 2 + EXIT_WITHIN, f"the server took {took:.1f} s to exit"
    deadline = time.monotonic() + 10
    while any(
        process.info["cmdline"] == ["sleep", CHECK_SLEEP]
        for process in psutil.process_iter(["cmdline"])
    ):  # the check's sandbox was closed with it
        assert time.monotonic() < deadline, "the check outlived the server"
        time.sleep(0.1)
