"""A small HTTP/1.1 client for the sandbox protocol, on asyncio streams.

A sandbox round trip should cost less than spawning a process, and httpx's layers (anyio,
httpcore's pool and state machines, h11) cost ~1.4 ms per request here, several times what the
action server itself takes (the figures are in the git history of README.md's Benchmarks
section). The protocol needs little: keep-alive connections over a Unix socket or TCP (TLS for
``https``), one request at a time on each, bodies framed by Content-Length (chunked and
read-to-close answers are understood too), a timeout per request. Requests are written in one
piece and answers parsed with ``bytes`` methods; idle connections are kept in a small pool, so
concurrent requests each get one.

Errors: ``HttpTimeout`` when a request took too long, ``HttpError`` for every other transport
failure (refused, reset, closed before the answer ended, not an HTTP answer). A connection
that failed, timed out or was cancelled mid-request is closed, never reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections import deque
from typing import Any
from urllib.parse import urlencode, urlsplit

from app.errors import ChronicleError

#: Idle connections kept per client; more are closed when their request ends.
MAX_IDLE = 8
#: The longest header block (status line and headers) an answer may have.
MAX_HEADER_BYTES = 64 * 1024
#: Answers with a body read to the connection's close are cut off here.
MAX_UNFRAMED_BYTES = 256 * 1024 * 1024


class HttpError(ChronicleError):
    """The request failed in transport: no (complete, well-formed) answer came."""


class HttpTimeout(HttpError):
    """No complete answer within the request's timeout."""


class HttpResponse:
    """A whole answer: status, headers (names lowercased), body."""

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON; ``ValueError`` when it is not."""
        return json.loads(self.content)

    def __repr__(self) -> str:
        return f"<HttpResponse {self.status_code}, {len(self.content)} bytes>"


class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        """Still open, and the server has not closed its side while it sat idle."""
        return not self.writer.is_closing() and not self.reader.at_eof()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class HttpClient:
    """Requests to one server: ``base_url`` (http or https), or a Unix socket when given."""

    def __init__(
        self,
        base_url: str,
        *,
        unix_socket: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        max_idle: int = MAX_IDLE,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"{base_url!r} is not an http:// or https:// URL")
        self.base_url = base_url.rstrip("/")
        self.unix_socket = unix_socket
        #: Sent with every request (mutable: a caller may change them between requests).
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (443 if self._tls else 80)
        self._prefix = parts.path.rstrip("/")
        self._host_header = parts.netloc or self._host
        self._idle: deque[_Connection] = deque()
        self._max_idle = max_idle
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    async def aclose(self) -> None:
        self._closed = True
        while self._idle:
            connection = self._idle.popleft()
            connection.close()
            with contextlib.suppress(Exception):
                await connection.writer.wait_closed()

    async def get(self, path: str, **kwargs: Any) -> HttpResponse:
        return await self.request("GET", path, **kwargs)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        content: bytes = b"",
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> HttpResponse:
        """Send one request and read its whole answer within ``timeout`` seconds."""
        if self._closed:
            raise HttpError("the client is closed")
        head = self._head(method, path, params, content, headers)
        connection: _Connection | None = None
        try:
            async with asyncio.timeout(self.timeout if timeout is None else timeout):
                connection = await self._connection()
                connection.writer.write(head + content if content else head)
                response, keep = await _read_response(connection.reader, method)
        except HttpTimeout:
            raise
        except TimeoutError:
            if connection is not None:
                connection.close()
            raise HttpTimeout(f"no answer to {method} {path} in time") from None
        except (OSError, EOFError, ValueError, asyncio.LimitOverrunError) as exc:
            if connection is not None:
                connection.close()
            raise HttpError(_describe(exc)) from exc
        except BaseException:  # cancelled mid-request: the connection's state is unknown
            if connection is not None:
                connection.close()
            raise
        if keep and not self._closed and len(self._idle) < self._max_idle:
            self._idle.append(connection)
        else:
            connection.close()
        return response

    def _head(
        self,
        method: str,
        path: str,
        params: dict[str, str] | None,
        content: bytes,
        headers: dict[str, str] | None,
    ) -> bytes:
        target = self._prefix + path
        if params:
            target += "?" + urlencode(params)
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._host_header}"]
        merged = {**self.headers, **headers} if headers else self.headers
        lines += [f"{name}: {value}" for name, value in merged.items()]
        if content or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(content)}")
        lines.append("\r\n")
        try:
            return "\r\n".join(lines).encode("latin-1")
        except UnicodeEncodeError as exc:
            raise ValueError(f"a request header is not latin-1 text: {exc}") from None

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()  # the most recently used: least likely timed out
            if connection.usable():
                return connection
            connection.close()
        try:
            async with asyncio.timeout(self.connect_timeout):
                if self.unix_socket is not None:
                    reader, writer = await asyncio.open_unix_connection(
                        self.unix_socket, limit=MAX_HEADER_BYTES
                    )
                else:
                    reader, writer = await asyncio.open_connection(
                        self._host, self._port, ssl=self._tls_context(), limit=MAX_HEADER_BYTES
                    )
        except TimeoutError:
            where = self.unix_socket or f"{self._host}:{self._port}"
            raise HttpTimeout(
                f"could not connect to {where} in {self.connect_timeout:g} s"
            ) from None
        return _Connection(reader, writer)

    def _tls_context(self) -> ssl.SSLContext | None:
        if not self._tls:
            return None
        if self._ssl is None:  # loading the CA store takes tens of ms: only for https
            self._ssl = ssl.create_default_context()
        return self._ssl


async def _read_response(reader: asyncio.StreamReader, method: str) -> tuple[HttpResponse, bool]:
    """The next complete answer on ``reader`` and whether the connection may be reused."""
    while True:
        block = await reader.readuntil(b"\r\n\r\n")
        status, version, headers = _parse_head(block)
        if not 100 <= status < 200:  # skip informational answers (100 Continue)
            break
    keep = version == "HTTP/1.1"
    connection = headers.get("connection", "").lower()
    if "close" in connection:
        keep = False
    elif "keep-alive" in connection:
        keep = True
    if method == "HEAD" or status in (204, 304):
        return HttpResponse(status, headers, b""), keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return HttpResponse(status, headers, await _read_chunked(reader)), keep
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise ValueError(f"Content-Length {length[:40]!r} is not a byte count")
        return HttpResponse(status, headers, await reader.readexactly(int(length))), keep
    body = await reader.read(MAX_UNFRAMED_BYTES)  # framed by the connection's close
    return HttpResponse(status, headers, body), False


def _parse_head(block: bytes) -> tuple[int, str, dict[str, str]]:
    lines = block[:-4].decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ValueError(f"not an HTTP answer: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise ValueError(f"malformed header line {line[:80]!r}")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return int(code), version, headers


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size_text = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ValueError(f"bad chunk size {size_text[:20]!r}") from None
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                pass
            return b"".join(parts)
        total += size
        if total > MAX_UNFRAMED_BYTES:
            raise ValueError("the chunked answer is too large")
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.IncompleteReadError):
        return "the connection closed before the answer was complete"
    if isinstance(exc, asyncio.LimitOverrunError):
        return "the answer's headers are too long"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
