"""A streamed gateway call as an ASGI app: each chunk relayed as it arrives, a client that goes
away noticed at once.

The response starts only with the call's first chunk, so a call that fails before any (the
model refused, or is down after the gateway's retries) is still answered with its status and
the protocol's error document, as the SDKs expect. From then on each chunk is one SSE frame,
sent as it comes (the time to the first token is the model's). A client that disconnects
(``http.disconnect``, watched the whole time, since a send to a closed connection is silently
dropped) cuts the call: the model's stream is closed and the call is recorded with what came
(``app.external.calls.CallStream.cut``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from litestar.types import Receive, Scope, Send

from app.external.calls import CallStream
from app.external.errors import GatewayError
from app.server.json_text import dumps

#: What a protocol makes of a stream: its SSE frames from the first chunk (None when the call
#: ended without any) and the rest.
Frames = Callable[[dict[str, Any] | None, AsyncIterator[dict[str, Any]]], AsyncIterator[bytes]]
#: A protocol's error document for a status, a message and a code.
ErrorBody = Callable[[int, str, str | None], dict[str, Any]]

_SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


@dataclass
class StreamedCall:
    """The ASGI app that answers a streamed call (see the module's docstring)."""

    stream: CallStream
    frames: Frames
    error_body: ErrorBody
    headers: list[tuple[bytes, bytes]]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.ensure_future(_disconnected(receive))
        relay = asyncio.ensure_future(self._relay(send))
        try:
            await asyncio.wait({gone, relay}, return_when=asyncio.FIRST_COMPLETED)
            if not relay.done():  # the client went away first
                self.stream.cut("the client disconnected")
                relay.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await relay
                await self.stream.ended()
                return
            relay.result()
        finally:
            gone.cancel()
            if not relay.done():  # the server cancelled this response (shutting down)
                self.stream.cut("the server is shutting down")
                relay.cancel()

    async def _relay(self, send: Send) -> None:
        chunks = aiter(self.stream)
        first = await anext(chunks, None)
        if first is None and self.stream.error is not None:
            await self._refuse(send, self.stream.error)
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*_SSE_HEADERS, *self.headers]})  # fmt: skip
        async for frame in self.frames(first, chunks):
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _refuse(self, send: Send, error: GatewayError) -> None:
        body = dumps(self.error_body(error.status, error.message, error.code))
        headers = [(b"content-type", b"application/json"), *self.headers]
        headers += [(k.lower().encode(), v.encode()) for k, v in error.headers.items()]
        await send({"type": "http.response.start", "status": error.status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
