"""The sandbox's HTTP client (app/runtime/http.py) against a scripted server on a Unix socket.

What it must get right beyond the action server's own answers (Content-Length, keep-alive):
chunked bodies, ``Connection: close``, a timeout, an answer cut off mid-body, and never
sending a request on a connection whose previous request failed or timed out (the answer
still on its way would be read as the next one's).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.runtime.http import HttpClient, HttpError, HttpTimeout


class Scripted:
    """Answers each request with the next scripted raw reply; counts connections."""

    def __init__(self, replies: list[bytes | None]) -> None:
        self.replies = replies
        self.connections = 0
        self.requests: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.replies:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(head)
                reply = self.replies.pop(0)
                if reply is None:  # stall: the client's timeout is the test
                    await asyncio.sleep(5)
                    return
                writer.write(reply)
                await writer.drain()
                if b"Connection: close" in reply or b"cut" in reply:
                    return
        except asyncio.IncompleteReadError:
            return
        finally:
            writer.close()


def _ok(body: bytes, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode("latin-1") + body


async def _client(tmp_path: Path, script: Scripted) -> tuple[HttpClient, asyncio.Server]:
    path = str(tmp_path / "s.sock")
    server = await asyncio.start_unix_server(script.serve, path)
    return HttpClient("http://sandbox", unix_socket=path, timeout=2), server


async def test_keep_alive_then_close(tmp_path: Path) -> None:
    script = Scripted([_ok(b"one"), _ok(b"two", "Connection: close\r\n"), _ok(b"three")])
    client, server = await _client(tmp_path, script)
    async with server:
        bodies = [(await client.get("/alive")).content for _ in range(3)]
        await client.aclose()
    assert bodies == [b"one", b"two", b"three"]
    assert script.connections == 2  # reused once, then a new one after "Connection: close"


async def test_chunked_answer(tmp_path: Path) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"
    )
    script = Scripted([chunked, _ok(b"after")])
    client, server = await _client(tmp_path, script)
    async with server:
        first = await client.request("POST", "/execute", content=b'{"kind": "run"}')
        second = await client.get("/alive")
        await client.aclose()
    assert first.content == b"hello world" and second.content == b"after"
    assert b"Content-Length: 15" in script.requests[0]
    assert script.connections == 1


async def test_timeout_drops_the_connection(tmp_path: Path) -> None:
    script = Scripted([None, _ok(b"fresh")])
    client, server = await _client(tmp_path, script)
    async with server:
        with pytest.raises(HttpTimeout):
            await client.get("/execute", timeout=0.2)
        # The stalled connection is never reused: its late answer would be taken for this one.
        assert (await client.get("/alive")).content == b"fresh"
        await client.aclose()
    assert script.connections == 2


async def test_answer_cut_off_mid_body(tmp_path: Path) -> None:
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nX: cut\r\n\r\nonly part"
    script = Scripted([cut, _ok(b"next")])
    client, server = await _client(tmp_path, script)
    async with server:
        with pytest.raises(HttpError) as failed:
            await client.get("/execute")
        assert not isinstance(failed.value, HttpTimeout)
        assert (await client.get("/alive")).content == b"next"
        await client.aclose()
    assert script.connections == 2
