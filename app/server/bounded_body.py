"""A request body read here, not by Litestar, bounded: the model gateway's and OTLP's routes
take bodies larger than the rest of the API (``request_max_body_size=None`` on the route) up
to a limit of their own.

A body over the limit is read on (and dropped) up to ``drain_limit`` bytes before the refusal
is raised, so that a client still sending reads the 413 instead of a reset connection; a
``Content-Length`` beyond ``drain_limit`` is refused before anything is read.
"""

from __future__ import annotations

from typing import Any

from litestar import Request


async def bounded_body(
    request: Request[Any, Any, Any], limit: int, too_large: Exception, *, drain_limit: int
) -> bytes:
    """The request's body, at most ``limit`` bytes; ``too_large`` raised past it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > drain_limit:
        raise too_large
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > drain_limit:
            raise too_large
        if size <= limit:
            parts.append(part)
    if size > limit:
        raise too_large
    return b"".join(parts)
