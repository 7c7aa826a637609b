"""The client fails a runtime only when the sandbox is gone, never for one bad answer.

A server that answers one action with a 500, an HTML page, JSON that is no observation, or
that drops the connection while it still answers ``/alive``, costs that one action an
``error`` observation; only a sandbox that fails its liveness check raises
``SandboxUnavailableError`` (which makes the executor give the runtime up). Before: a reply
that was not JSON raised ``JSONDecodeError`` out of ``execute`` (no ``SandboxError``, so the
executor's task died), and a dropped connection made the whole sandbox "unavailable".

The server here is a real HTTP server in a thread of this process that answers as scripted:
the real action server never misbehaves on purpose (tests/contract/runtime/test_bad_requests.py),
a proxy or another version in front of a remote runtime can.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from app.events import ErrorObservation, Run, RunOutput
from app.runtime import SandboxClient, SandboxUnavailableError

OUTPUT = {"kind": "run.output", "output": "fine\n", "exit_code": 0}


class Scripted(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ScriptedServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.server.alive:
            self._send(200, b'{"ok": true, "idle": 0}')
        else:
            self._send(503, b'{"error": "down"}')

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append(body)
        answer = self.server.answers.pop(0)
        if answer == "drop":
            self.close_connection = True
            return
        if answer == "slow":
            time.sleep(3)  # a slow sandbox: what the client does meanwhile is the test
            answer = (200, "application/json", json.dumps(OUTPUT).encode())
        assert isinstance(answer, tuple)
        status, content_type, payload = answer
        self._send(status, payload, content_type)


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Scripted)
        self.alive = True
        self.answers: list[tuple[int, str, bytes] | str] = []
        self.received: list[bytes] = []


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    server = ScriptedServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
async def client(scripted: ScriptedServer) -> AsyncIterator[SandboxClient]:
    sandbox = SandboxClient(f"http://127.0.0.1:{scripted.server_address[1]}", "token")
    yield sandbox
    await sandbox.close()


async def test_one_bad_answer_is_one_error_observation(
    scripted: ScriptedServer, client: SandboxClient
) -> None:
    scripted.answers = [
        (500, "text/html", b"<html>Internal Server Error</html>"),
        (200, "text/html", b"<html>a proxy's page</html>"),
        (200, "application/json", b'{"kind": "run", "command": "not an observation"}'),
        (200, "application/json", b'{"kind": "run.output", "exit_code": "many"}'),
        "drop",
        (200, "application/json", json.dumps(OUTPUT).encode()),
    ]
    answers = [await client.execute(Run(command="echo fine")) for _ in range(6)]
    errors = [answer for answer in answers[:5] if isinstance(answer, ErrorObservation)]
    assert len(errors) == 5, answers
    assert all(error.error_type == "sandbox" for error in errors)
    assert "500" in errors[0].message and "Internal Server Error" in errors[0].message
    assert "not JSON" in errors[1].message
    assert "not an observation" in errors[2].message
    assert "exit_code" in errors[3].message
    assert "dropped the connection" in errors[4].message and "still" in errors[4].message
    assert isinstance(answers[5], RunOutput) and answers[5].output == "fine\n"


async def test_an_action_without_an_answer_from_a_live_sandbox(
    scripted: ScriptedServer, client: SandboxClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("app.runtime.client.TRANSPORT_MARGIN", 0.2)  # not 30 s in a test
    scripted.answers = ["slow"]
    answer = await client.execute(Run(command="sleep 1", timeout=0.3))
    assert isinstance(answer, ErrorObservation), answer
    assert "no answer to the action within 0.5 s" in answer.message
    assert "may still be running" in answer.message


async def test_a_dropped_connection_of_a_dead_sandbox_fails_the_runtime(
    scripted: ScriptedServer, client: SandboxClient
) -> None:
    scripted.answers = ["drop"]
    scripted.alive = False
    with pytest.raises(SandboxUnavailableError, match="unreachable"):
        await client.execute(Run(command="echo fine"))


async def test_actions_go_out_as_valid_json_whatever_their_text(
    scripted: ScriptedServer, client: SandboxClient
) -> None:
    scripted.answers = [(200, "application/json", json.dumps(OUTPUT).encode())]
    await client.execute(Run(command="echo caf\udce9 \x00"))
    sent = scripted.received[0]
    sent.decode("ascii")  # escaped, so any server's JSON parser reads it
    assert json.loads(sent)["command"] == "echo caf\udce9 \x00"
