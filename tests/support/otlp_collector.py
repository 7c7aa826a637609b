"""A local OTLP/HTTP collector for the tests: it reads each request with OpenTelemetry's own
classes and keeps what it takes, and can be told to answer as a collector that is down,
refuses some spans, or never answers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan


class Collector(ThreadingHTTPServer):
    """An OTLP/HTTP endpoint that keeps what it takes. ``status``: what it answers (200
    takes); ``refuse``: a span name it answers 400 for; ``hang``: it keeps the request and
    answers only once ``release`` is set (as a collector whose answer never came back)."""

    def __init__(self) -> None:
        self.received: list[ExportTraceServiceRequest] = []
        #: The path and headers of each request taken, beside ``received``.
        self.posts: list[tuple[str, dict[str, str]]] = []
        self.status = 200
        self.refuse: str | None = None
        self.hang = False
        self.hung: list[ExportTraceServiceRequest] = []
        self.release = threading.Event()
        self.tries = 0
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def spans(self) -> list[OtlpSpan]:
        return [s for r in list(self.received) for rs in r.resource_spans
                for ss in rs.scope_spans for s in ss.spans]  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        server = self.server
        server.tries += 1
        names = {s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans}
        if server.status != 200:
            self._answer(server.status, b"down", "text/plain", {"Retry-After": "0"})
            return
        if server.refuse is not None and server.refuse in names:
            self._answer(400, b"bad span", "text/plain")
            return
        if server.hang:
            server.hung.append(request)
            server.release.wait(30)
            return  # the request dies with no answer
        server.received.append(request)
        server.posts.append((self.path, dict(self.headers)))
        answer = ExportTraceServiceResponse().SerializeToString()
        self._answer(200, answer, "application/x-protobuf")

    def _answer(
        self, status: int, body: bytes, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@contextmanager
def running_collector() -> Iterator[Collector]:
    """A ``Collector`` serving on a free loopback port while the block runs."""
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
