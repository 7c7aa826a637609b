"""The model server `chronicle bench gateway` calls: OpenAI's chat completions, answered at once.

Run in a process of its own (``python -m bench.gateway_upstream``), so that neither the bench's
clients nor ``chronicle serve`` share its CPU time; it prints ``listening on PORT`` when ready.
Every request gets the same short answer (streamed as OpenAI streams when asked, the usage
last), with no work per request beyond reading the body: whatever time a call takes through
the gateway beyond a direct call is the gateway's.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson
import uvicorn

ANSWER = "Done: the tests pass now."
PIECES = ["Done: ", "the tests ", "pass now."]
USAGE = {"prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128}

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def completion(model: str) -> bytes:
    return orjson.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": ANSWER},
                    "finish_reason": "stop",
                }
            ],
            "usage": USAGE,
        }
    )


def chunks(model: str, usage: bool) -> list[bytes]:
    """The SSE frames of the streamed answer."""
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": model}
    frames = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    frames += [
        {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        for piece in PIECES
    ]
    frames.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if usage:
        frames.append({**base, "choices": [], "usage": USAGE})
    return [b"data: " + orjson.dumps(frame) + b"\n\n" for frame in frames] + [b"data: [DONE]\n\n"]


async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = orjson.loads(body) if body else {}
    model = str(request.get("model", "bench"))
    if not request.get("stream"):
        answer = completion(model)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": answer})
        return
    usage = bool((request.get("stream_options") or {}).get("include_usage"))
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream")],
        }
    )
    for frame in chunks(model, usage):
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


def main() -> None:
    # proto given: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and without
    # it the body, written after the headers, waits out the client's delayed ACK (40 ms)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    print(f"listening on {sock.getsockname()[1]}", flush=True)
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
