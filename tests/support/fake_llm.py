"""A real HTTP server that speaks the OpenAI chat-completions protocol, with scripted replies.

Tests script what the "model" answers (text, tool calls, usage, or an HTTP error with
headers), then drive litellm against it through a base URL, exactly as a user would point
Chronicle at a local or company model. A request with ``"stream": true`` is answered as
OpenAI streams: SSE ``chat.completion.chunk`` frames (the content in ``stream_pieces``, each
tool call's arguments in two halves, the usage last when ``stream_options.include_usage``),
then ``data: [DONE]``; ``stream_held`` holds the rest after the first piece, and
``stream_cut_after`` closes the connection part-way. A reply can also be a raw body sent
byte for byte (``Reply(body=...)``): odd JSON, an HTML page with status 200,
``"choices": []``, escapes such as ``\\udce9`` or ``\\u0000``, numbers like ``1e999`` that
``json.dumps`` would never write, SSE frames of one's own.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"name", "arguments"}
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error: str = "scripted failure"
    error_code: str | None = None
    delay: float = 0.0
    prompt_tokens: int = 100
    completion_tokens: int = 20
    cached_tokens: int = 0
    #: Sent in the usage when set: Anthropic-style cache writes, OpenAI-style reasoning tokens.
    cache_creation_tokens: int | None = None
    reasoning_tokens: int | None = None
    #: The usage object as raw JSON text instead of the one built from the counts above
    #: (``{"prompt_tokens": 1e999}``, ``"abc"``: what ``json.dumps`` would never write).
    usage_json: str | None = None
    #: The message's ``reasoning_content`` (a reasoning model's thinking), when set.
    reasoning_content: str | None = None
    #: Sent verbatim instead of a completion built from the fields above (status still applies).
    body: str | bytes | None = None
    content_type: str = "application/json"
    #: Answer only once ``FakeLlmServer.release_held()`` is called (a request held in flight,
    #: e.g. while the test kills the process that sent it).
    held: bool = False
    #: A streamed reply's content in these pieces (default: the content in three).
    stream_pieces: list[str] | None = None
    #: A streamed reply sends its first piece, then waits for ``release_held()``.
    stream_held: bool = False
    #: A streamed reply sends only its first this many frames, then closes the connection
    #: (no ``[DONE]``): an upstream that went away mid-stream.
    stream_cut_after: int | None = None


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def raw_tool_call(name: str, arguments_json: str) -> dict[str, Any]:
    """A tool call whose arguments are exactly this JSON text (``1e999``, ``"false"``, ...)."""
    return {"name": name, "arguments": arguments_json}


def raw_completion(message_json: str, *, finish_reason: str = "stop") -> str:
    """A whole chat-completion body around a hand-written ``message`` object, for escape
    text a Python ``json.dumps`` would not produce."""
    return (
        '{"id": "chatcmpl-raw", "object": "chat.completion", "created": 1, "model": "fake", '
        f'"choices": [{{"index": 0, "message": {message_json}, '
        f'"finish_reason": "{finish_reason}"}}], '
        '"usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}'
    )


class FakeLlmServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        #: Streamed replies whose reader went away before the end (a write failed).
        self.cut_streams = 0
        #: Streamed replies that have sent their first piece.
        self.streams_started = 0
        #: When set, a request without ``Authorization: Bearer <key>`` is answered 401, and
        #: one for a model not in ``models`` (when set) 404, as OpenAI's API answers them,
        #: before any scripted reply is taken (the request is still in ``requests``).
        self.key: str | None = None
        self.models: set[str] | None = None
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._stopping = False
        #: Tasks in ``wait_until``: their loop and the event the server's threads set.
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def start(self) -> FakeLlmServer:
        self._thread.start()
        return self

    def release_held(self) -> None:
        """Let every held reply (``Reply(held=True)``) go, now and from now on."""
        self._released.set()

    def hold(self) -> None:
        """Hold held replies again (after ``release_held``), until the next release."""
        self._released.clear()

    def stop(self) -> None:
        self._stopping = True  # held replies go unanswered: their askers are usually dead
        self._released.set()
        self._server.shutdown()
        self._server.server_close()

    async def wait_until(
        self, condition: Callable[[FakeLlmServer], bool], timeout: float = 60
    ) -> None:
        """Return once ``condition(server)`` holds (``len(s.requests) >= 2``, ``s.in_flight ==
        1``); it is checked again whenever a request starts or ends, so nothing polls."""
        changed = asyncio.Event()
        waiter = (asyncio.get_running_loop(), changed)
        with self._lock:
            self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                while True:
                    changed.clear()
                    with self._lock:
                        if condition(self):
                            return
                    await changed.wait()
        finally:
            with self._lock:
                self._waiters.remove(waiter)

    def _changed(self) -> None:
        """Under the lock: wake every ``wait_until`` to check its condition again."""
        for loop, changed in self._waiters:
            loop.call_soon_threadsafe(changed.set)

    def _refusal(self, body: dict[str, Any]) -> Reply | None:
        """OpenAI's answer to a wrong key or an unknown model (see ``key``), else None."""
        if self.key is not None and body.get("_authorization") != f"Bearer {self.key}":
            return Reply(status=401, error_code="invalid_api_key",
                         error="Incorrect API key provided: sk-wr***. You can find your API "
                               "key at https://platform.openai.com/account/api-keys.")  # fmt: skip
        if self.models is not None and body.get("model") not in self.models:
            return Reply(status=404, error_code="model_not_found",
                         error=f"The model `{body.get('model')}` does not exist or you do not "
                               "have access to it.")  # fmt: skip
        return None

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._changed()
            refusal = self._refusal(body)
            if refusal is not None:
                return refusal
            return (
                self.replies.popleft()
                if self.replies
                else Reply(status=500, error="no scripted reply left")
            )

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1
            self._changed()

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)
            self._changed()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(
                self,
                status: int,
                body: dict[str, Any] | str | bytes,
                headers: dict[str, str],
                content_type: str = "application/json",
            ) -> None:
                if isinstance(body, dict):
                    body = json.dumps(body)
                data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length) or b"{}")
                request["_authorization"] = self.headers.get("Authorization")
                reply = fake._next(request)
                try:
                    if reply.held:
                        fake._released.wait(600)
                        if fake._stopping:
                            return
                    time.sleep(reply.delay)
                    if reply.body is not None:
                        self._send(reply.status, reply.body, reply.headers, reply.content_type)
                        return
                    if reply.status != 200:
                        error = {"message": reply.error, "type": "error", "code": reply.error_code}
                        self._send(reply.status, {"error": error}, reply.headers)
                        return
                    if request.get("stream"):
                        self._stream(request, reply)
                        return
                    self._send(200, completion(request, reply), reply.headers)
                finally:
                    fake._done()

            def _stream(self, request: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.close_connection = True
                frames = stream_chunks(request, reply)
                if reply.stream_cut_after is not None:
                    del frames[reply.stream_cut_after :]
                try:
                    for index, frame in enumerate(frames):
                        self.wfile.write(
                            b"data: " + frame.encode("utf-8", "surrogatepass") + b"\n\n"
                        )
                        self.wfile.flush()
                        if index == 1:  # the role's chunk, then the first piece
                            fake._count("streams_started")
                            if reply.stream_held:
                                fake._released.wait(600)
                                if fake._stopping:
                                    return
                    if reply.stream_cut_after is None:
                        self.wfile.write(b"data: [DONE]\n\n")
                        self.wfile.flush()
                except OSError:  # the reader went away
                    fake._count("cut_streams")

        return Handler


def completion(request: dict[str, Any], reply: Reply) -> dict[str, Any] | str:
    """The chat completion of a scripted reply (JSON text when its usage is raw text)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning_content is not None:
        message["reasoning_content"] = reply.reasoning_content
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}_{int(time.time() * 1000)}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call["arguments"], str)
                    else json.dumps(call["arguments"]),
                },
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    body = {
        "id": f"chatcmpl-{int(time.time() * 1000)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": _usage(reply),
    }
    if reply.usage_json is None:
        return body
    return json.dumps(body).replace('"usage": "USAGE"', f'"usage": {reply.usage_json}')


def stream_chunks(request: dict[str, Any], reply: Reply) -> list[str]:
    """The JSON of each ``chat.completion.chunk`` of a streamed reply, in order."""
    head = {
        "id": f"chatcmpl-{int(time.time() * 1000)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return json.dumps({**head, "choices": [choice]})

    content = reply.content or ""
    pieces = reply.stream_pieces
    if pieces is None:
        third = max(1, len(content) // 3)
        pieces = [content[i : i + third] for i in range(0, len(content), third)] or [""]
    frames = [chunk({"role": "assistant", "content": ""})]
    frames += [chunk({"content": piece}) for piece in pieces]
    for index, call in enumerate(reply.tool_calls):
        arguments = call["arguments"]
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        half = len(text) // 2
        opening = {
            "index": index,
            "id": f"call_{index}_{int(time.time() * 1000)}",
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        frames.append(chunk({"tool_calls": [opening]}))
        for part in (text[:half], text[half:]):
            frames.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            )
    frames.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    options = request.get("stream_options") or {}
    if options.get("include_usage"):
        usage = _usage(reply)
        frames.append(json.dumps({**head, "choices": [], "usage": usage}))
    return frames


def _usage(reply: Reply) -> dict[str, Any] | str:
    if reply.usage_json is not None:
        return "USAGE"  # replaced by the raw text
    usage: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
    }
    if reply.cache_creation_tokens is not None:
        usage["cache_creation_input_tokens"] = reply.cache_creation_tokens
    if reply.reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
    return usage
