"""The HTTP/1.1 protocol under `chronicle serve`: uvicorn's, with deadlines for slow clients and
a cap on open connections.

uvicorn has no timeout on receiving a request (its ``timeout_keep_alive`` covers the quiet
between two requests, and the first byte of the next one cancels it), so a client that sends
its request line and headers a byte every few seconds, or its body slower than any real client
would, holds its connection as long as it likes: 400 such sockets were all held for 45 s, and
enough of them exhaust the process's descriptors. ASGI middleware cannot help: the app is
called only once the head has arrived. So the protocol itself keeps two deadlines:

- a request's head (line and headers) must arrive within ``header_timeout`` of the connection
  opening or of the previous response ending (an idle keep-alive connection is closed sooner,
  by uvicorn's own keep-alive timeout);
- its body must arrive within ``body_timeout`` of its head, whether or not the app still
  waits for it (a route that answered early, e.g. 401, does not let the body dribble on).

A client past a deadline is answered 408 (a problem document) when no response is under way,
and its connection is closed. A WebSocket's handshake must be answered within
``header_timeout`` of its upgrade request too (an upgrade request with a body was held by
uvicorn's WebSocket protocol, unanswered, for good), or the connection is aborted.

A client that stops reading is cut too: when a response (or an SSE stream) has filled the
connection's write buffer and the client takes none of it for ``write_timeout``, the
connection is aborted. Before, a client that asked for a large public document (the OpenAPI
one) or pipelined requests with a tiny receive window, and never read, held its place under
the cap for good, unauthenticated: a few such sockets per free place locked everyone out.
Nothing else is timed: a response that takes long to make, an SSE stream that is read, or a
WebSocket (past its handshake: its pings end a client that stops answering) is never cut.

``max_connections`` bounds the connections open at once (HTTP, SSE and WebSocket alike): one
more is answered 503 with ``Retry-After`` at once, without reading its request, and closed a
moment later; the connections already open carry on. The cap keeps the process within its
descriptors; the deadlines bound how long a slow client can hold a place under it.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import h11
import orjson
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.server.connection_addresses import AddressCounts, AddressFull

log = logging.getLogger(__name__)

#: How long a refused connection lingers, reading and discarding what the client still sends,
#: so that it reads the 503 instead of a reset (closing with unread input sends a RST).
REFUSAL_LINGER = 1.0
#: Descriptors kept for everything but client connections (database pool, sandboxes, files).
RESERVED_DESCRIPTORS = 256
#: Seconds between two warnings that the connection cap was reached.
WARN_EVERY = 60.0

Waiting = Literal["head", "body"]


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float
    body_timeout: float
    max_connections: int
    #: Seconds a full write buffer may wait for the client to read any of it.
    write_timeout: float = 60.0
    #: Connections one client address may hold open (``connection_addresses``; 0: no limit).
    max_per_address: int = 0
    #: The proxies exempt from ``max_per_address`` (``server_forwarded_allow_ips``).
    forwarded_allow_ips: str = ""


def _raw_problem(status: int, reason: str, detail: str, extra: dict[str, str]) -> bytes:
    """A whole HTTP/1.1 response with a problem document, written outside h11 (which cannot
    answer before a request has arrived), that closes the connection."""
    body = orjson.dumps({"title": reason, "status": status, "detail": detail})
    headers = {
        "content-type": "application/problem+json",
        "content-length": str(len(body)),
        "connection": "close",
        **extra,
    }
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return head.encode("ascii") + b"\r\n" + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and the cap of ``limits`` (see the module)."""

    limits: ClassVar[ConnectionLimits]
    addresses: ClassVar[AddressCounts | None] = None
    _warned_at: ClassVar[float] = float("-inf")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting: Waiting | None = None
        self._refused = False
        self._upgraded = False
        self._write_stall: asyncio.TimerHandle | None = None
        self._address_key: str | None = None

    # -- the cap ----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            self._refuse(transport)
            return
        if self.addresses is not None:
            peer = transport.get_extra_info("peername")
            host = str(peer[0]) if isinstance(peer, (tuple, list)) and peer else None
            try:
                self._address_key = self.addresses.take(host)
            except AddressFull as full:
                self._refuse(transport, str(full))
                return
        super().connection_made(transport)
        self._watch()

    def _give_back_address(self) -> None:
        if self.addresses is not None:
            self.addresses.give_back(self._address_key)
        self._address_key = None

    def _refuse(self, transport: asyncio.Transport, detail: str | None = None) -> None:
        self._refused = True
        self.transport = transport
        now = time.monotonic()
        if detail is None and now - GuardedH11Protocol._warned_at >= WARN_EVERY:
            GuardedH11Protocol._warned_at = now
            log.warning(
                "refusing connections: %d are open (server_max_connections)",
                self.limits.max_connections,
            )
        transport.write(
            _raw_problem(
                503,
                "Service Unavailable",
                detail
                or f"the server has {self.limits.max_connections} connections open, its most; "
                "retry in a moment",
                {"retry-after": "1"},
            )
        )
        if transport.can_write_eof():
            transport.write_eof()
        self._deadline = self.loop.call_later(REFUSAL_LINGER, transport.close)

    # -- the deadlines ----------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # discarded: the answer is written already
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._upgraded = True  # the WebSocket protocol owns the transport from here on
        self._disarm()
        super().handle_websocket_upgrade(event)
        websocket = self.transport.get_protocol()
        if websocket is self:
            return
        # the handshake has the head's deadline too: an upgrade request with a body
        # (Content-Length) was held by the WebSocket protocol, unanswered, for good
        handshake = self.loop.call_later(
            self.limits.header_timeout, self._handshake_expired, websocket
        )
        lost = websocket.connection_lost

        def connection_lost(exc: Exception | None) -> None:
            # this protocol hears nothing more of the connection: its place under the
            # address's count is given back when the WebSocket's is lost
            handshake.cancel()
            self._give_back_address()
            lost(exc)

        websocket.connection_lost = connection_lost  # type: ignore[method-assign]

    def _handshake_expired(self, websocket: asyncio.BaseProtocol) -> None:
        if not _handshake_done(websocket) and not self.transport.is_closing():
            self.transport.abort()

    def pause_writing(self) -> None:
        """The write buffer is full: the client must read some of it within the deadline."""
        if self._refused:
            return  # its few bytes of 503 are all it is sent
        super().pause_writing()
        if self._write_stall is None and not self._upgraded:
            self._write_stall = self.loop.call_later(self.limits.write_timeout, self._stalled)

    def resume_writing(self) -> None:
        if self._refused:
            return
        super().resume_writing()
        self._stop_stall()

    def _stop_stall(self) -> None:
        if self._write_stall is not None:
            self._write_stall.cancel()
            self._write_stall = None

    def _stalled(self) -> None:
        """The client read nothing of a full buffer for ``write_timeout``: abort (closing
        would wait to flush a buffer the client does not read)."""
        self._write_stall = None
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._stop_stall()
        if not self._upgraded:
            self._give_back_address()
        if self._refused:
            return
        super().connection_lost(exc)

    def _watch(self) -> None:
        """Arm the deadline of what the connection waits for from its client, if anything."""
        if self._upgraded or self.transport is None or self.transport.is_closing():
            self._disarm()
            return
        state = self.conn.their_state
        waiting: Waiting | None = (
            "head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        )
        if waiting == self._waiting:
            return  # a deadline runs from when the wait began, not from the last byte
        self._disarm()
        if waiting is not None:
            timeout = self.limits.header_timeout if waiting == "head" else self.limits.body_timeout
            self._waiting = waiting
            self._deadline = self.loop.call_later(timeout, self._expired, waiting, timeout)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._waiting = None, None

    def _expired(self, waiting: Waiting, timeout: float) -> None:
        self._deadline, self._waiting = None, None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if waiting == "head":
            answer = cycle is None or cycle.response_complete or not cycle.response_started
        else:
            answer = cycle is not None and not cycle.response_started
        if answer:
            part = "head (request line and headers)" if waiting == "head" else "body"
            self.transport.write(
                _raw_problem(
                    408,
                    "Request Timeout",
                    f"the request's {part} did not arrive within {timeout:g} s",
                    {},
                )
            )
        if cycle is not None and not cycle.response_complete:
            # the app reading the body is told the client is gone, and writes nothing more
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.close()


def _handshake_done(websocket: asyncio.BaseProtocol) -> bool:
    """Whether uvicorn's WebSocket protocol answered the handshake (accepted or refused it)."""
    event = getattr(websocket, "handshake_completed_event", None)  # the websockets library's
    if isinstance(event, asyncio.Event):
        return event.is_set()
    return bool(getattr(websocket, "handshake_complete", True))  # sans-I/O and wsproto's


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """The protocol class to give uvicorn (``Config(http=...)``): it makes one instance per
    connection with its own arguments, so the limits travel on the class."""
    addresses = (
        AddressCounts(limits.max_per_address, limits.forwarded_allow_ips)
        if limits.max_per_address > 0
        else None
    )
    return type(
        "ChronicleH11Protocol", (GuardedH11Protocol,), {"limits": limits, "addresses": addresses}
    )


def ensure_descriptors(max_connections: int) -> str | None:
    """Raise this process's soft limit on open files so ``max_connections`` fit (with a reserve
    for everything else); a sentence saying what does not fit when the hard limit is lower."""
    wanted = max_connections + RESERVED_DESCRIPTORS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return None
    raised = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
    if raised > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
    if raised >= wanted:
        return None
    return (
        f"note: this process may open {raised} files, fewer than server_max_connections "
        f"({max_connections}) plus {RESERVED_DESCRIPTORS} for the rest; raise its limit "
        "(ulimit -n) or lower server_max_connections"
    )
