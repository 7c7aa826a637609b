"""A session whose text holds lone surrogates (in the task, the model's reply, a tool call's
arguments, a command's output, an MCP call's arguments) reads through every route that
carries its text as ``chronicle events --json`` prints it: JSON with the surrogate as its
``\\udce9`` escape. Before, the events page, the stream and the model call answered 500 (the
JSON encoders refuse a surrogate), so the page could not show the session. And a request body
may carry such an escape (JSON allows it; msgspec refused it as "Input data was truncated"),
while bytes that are not UTF-8 get a 400 that says so."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import UUID

import httpx
import pytest
from websockets.asyncio.client import connect

from app.events.masking import SecretMasker
from app.store import EventStore
from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle
from tests.support.surrogate_sessions import (
    COMMAND,
    MCP_KEY,
    MCP_VALUE,
    OUTPUT,
    REPLY,
    TASK,
    write_surrogate_session,
)
from tests.support.waiting import until


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def surrogate_session(shared_server: ServerProcess) -> UUID:
    async def write() -> UUID:
        url = shared_server.env["CHRONICLE_DATABASE_URL"]
        async with await EventStore.open(url, masker=SecretMasker()) as store:
            return await write_surrogate_session(store)

    return asyncio.run(write())


@pytest.fixture(scope="module")
def admin(shared_server: ServerProcess) -> dict[str, str]:
    return bearer(shared_server.token("surrogate-auditor", admin=True))


def get(server: ServerProcess, path: str, headers: dict[str, str], **params: Any) -> Any:
    answer = httpx.get(f"{server.url}{path}", headers=headers, params=params, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_events_read_as_the_command_line_prints_them(
    shared_server: ServerProcess, surrogate_session: UUID, admin: dict[str, str]
) -> None:
    page = get(shared_server, f"/api/sessions/{surrogate_session}/events", admin, limit=1000)
    printed = chronicle("events", str(surrogate_session), "--json", env=shared_server.env)
    assert printed.returncode == 0, printed.stderr
    cli = [json.loads(line) for line in printed.stdout.splitlines()]
    assert [e["payload"] for e in page["events"]] == [e["payload"] for e in cli]
    assert [e["hash"] for e in page["events"]] == [e["hash"] for e in cli]
    by_kind: dict[str, Any] = {}
    for event in page["events"]:  # the first of each kind
        by_kind.setdefault(event["kind"], event["payload"])
    assert by_kind["message"]["content"] == TASK
    assert by_kind["llm.call"]["response"]["content"] == REPLY
    assert by_kind["run"]["command"] == COMMAND
    assert by_kind["run.output"]["output"] == OUTPUT
    assert by_kind["mcp.call"]["arguments"] == {MCP_KEY: MCP_VALUE}
    assert by_kind["mcp.result"]["content"][0]["text"] == OUTPUT


def test_the_model_call_and_the_export_answer(
    shared_server: ServerProcess, surrogate_session: UUID, admin: dict[str, str]
) -> None:
    events = get(shared_server, f"/api/sessions/{surrogate_session}/events", admin)["events"]
    first_call = next(e["seq"] for e in events if e["kind"] == "llm.call")
    call = get(shared_server, f"/api/sessions/{surrogate_session}/model-calls/{first_call}", admin)
    assert call["response"]["content"] == REPLY
    assert TASK in [m.get("content") for m in call["messages"]]
    exported = httpx.get(
        f"{shared_server.url}/api/sessions/{surrogate_session}/export", headers=admin, timeout=30
    )
    assert exported.status_code == 200, exported.text
    cli = chronicle("export", str(surrogate_session), env=shared_server.env)
    assert cli.returncode == 0, cli.stderr
    assert exported.text == cli.stdout
    lines = [json.loads(line) for line in exported.text.splitlines()]
    assert OUTPUT in [line.get("payload", {}).get("output") for line in lines]


async def test_the_summary_and_the_list_answer(
    shared_server: ServerProcess, surrogate_session: UUID, admin: dict[str, str]
) -> None:
    """They come from session_state, whose text column holds U+FFFD where the title held a
    surrogate (as `chronicle sessions` shows it)."""
    async with httpx.AsyncClient(base_url=shared_server.url, headers=admin, timeout=30) as api:

        async def listed() -> bool:
            return (await api.get(f"/api/sessions/{surrogate_session}")).status_code == 200

        await until(listed, timeout=60, what="the session listed")
        summary = (await api.get(f"/api/sessions/{surrogate_session}")).json()
        assert summary["title"] == TASK.replace("\udce9", "\ufffd")
        page = await api.get("/api/sessions", params={"limit": 200})
        assert page.status_code == 200, page.text
        assert str(surrogate_session) in [s["id"] for s in page.json()["sessions"]]


async def test_the_streams_carry_the_same_events(
    shared_server: ServerProcess, surrogate_session: UUID, admin: dict[str, str]
) -> None:
    page = get(shared_server, f"/api/sessions/{surrogate_session}/events", admin)["events"]
    url = f"{shared_server.url}/api/sessions/{surrogate_session}/stream"
    sse: list[dict[str, Any]] = []
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("GET", url, headers=admin) as answer,
    ):
        assert answer.status_code == 200
        async with asyncio.timeout(30):
            async for line in answer.aiter_lines():
                if line.startswith("data: "):
                    sse.append(json.loads(line.removeprefix("data: ")))
                if len(sse) == len(page):
                    break
    assert sse == page
    socket_url = url.replace("http://", "ws://")
    async with connect(socket_url, additional_headers=admin, open_timeout=30) as socket:
        async with asyncio.timeout(30):
            messages = [json.loads(await socket.recv()) for _ in page]
    assert messages == page


def test_a_request_body_may_carry_an_escaped_surrogate(
    shared_server: ServerProcess, admin: dict[str, str]
) -> None:
    """JSON allows ``\\udce9``; the task is stored as the store stores every lone surrogate."""
    created = httpx.post(
        f"{shared_server.url}/api/sessions",
        headers={**admin, "Content-Type": "application/json"},
        content=b'{"task": "caf\\udce9 and \\ud83d alone"}',
        timeout=30,
    )
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    events = get(shared_server, f"/api/sessions/{session}/events", admin)["events"]
    message = next(e for e in events if e["kind"] == "message")
    assert message["payload"]["content"] == "caf\udce9 and \ud83d alone"
    sent = httpx.post(
        f"{shared_server.url}/api/sessions/{session}/messages",
        headers={**admin, "Content-Type": "application/json"},
        content=b'{"content": "and na\\udcefve.txt"}',
        timeout=30,
    )
    assert sent.status_code == 202, sent.text
    events = get(shared_server, f"/api/sessions/{session}/events", admin, limit=1000)["events"]
    said = [e["payload"]["content"] for e in events if e["kind"] == "message"]
    assert "and na\udcefve.txt" in said
    not_utf8 = httpx.post(
        f"{shared_server.url}/api/sessions",
        headers={**admin, "Content-Type": "application/json"},
        content=b'{"task": "caf\xe9"}',
        timeout=30,
    )
    assert not_utf8.status_code == 400, not_utf8.text
    assert "the request body is not UTF-8 text" in not_utf8.json()["detail"]
