"""Request bodies nested deeper than ``MAX_JSON_DEPTH`` are a 400, before anything decodes them.

Litestar decodes JSON bodies with msgspec, which recurses once per level: a body of 100,000
``[`` raised ``RecursionError`` in the decoder, a 500 on every route with a body, the
unauthenticated ``POST /api/login`` included. Catching that error would not be enough: a body
a little shallower than Python's recursion limit decodes, and then every recursive step after
it (validation, masking, canonical JSON, whose encoder stops at 254 levels) is the next place
to fail. No request of Chronicle's API comes near ``MAX_JSON_DEPTH``, so the body is measured
first and refused with the same 400 a malformed body gets.

The measure is cheap where it can be: a body with no more brackets than the limit cannot be
nested deeper, which ``bytes.count`` tells at C speed; only a body with many brackets is
scanned (its strings removed, then a running sum over what is left, in C as well).
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

from litestar import Request
from litestar.exceptions import SerializationException

from app.server.json_text import holds_escaped_surrogate, loads, utf8_text

#: Deepest nesting of arrays and objects a request body may have.
MAX_JSON_DEPTH = 100

#: A JSON string with its escapes (an unterminated one is left alone: it only adds brackets
#: to the count, and such a body fails to decode anyway).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def json_depth_exceeds(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text ``body`` nests arrays and objects deeper than ``limit``."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


class BoundedJsonRequest(Request[Any, Any, Any]):
    """Litestar's request, whose JSON body is refused (400) when nested too deeply, and which
    reads a lone surrogate's escape (``\\udce9``: valid JSON, which msgspec refuses; see
    ``json_text``) and says so when a body is not UTF-8."""

    async def json(self) -> Any:
        body = await self.body()
        if json_depth_exceeds(body):
            # Litestar answers a SerializationException from reading the body with a 400,
            # as it does for malformed JSON
            raise SerializationException(
                f"the JSON body is nested more than {MAX_JSON_DEPTH} levels deep"
            )
        try:
            return await super().json()
        except SerializationException as refused:
            return self._json_msgspec_refused(body, refused)

    def _json_msgspec_refused(self, body: bytes, refused: SerializationException) -> Any:
        try:
            text = utf8_text(body)
        except ValueError as exc:
            raise SerializationException(str(exc)) from None
        if not holds_escaped_surrogate(body):
            raise refused
        try:
            value = loads(text)
        except ValueError:
            raise refused from None
        self._json = self._connection_state.json = value
        return value
