"""JSON the API writes and reads, lone surrogates included.

A payload may hold a lone surrogate (``"caf\\udce9"``: a file name byte that is not UTF-8, or a
model's JSON escape). The log keeps it (``app.events.stored_form``), ``chronicle events
--json`` prints it as its escape, and JSON carries it as that escape too. The fast encoders
(msgspec, orjson, pydantic) refuse to write it, which made a session holding one a 500, and
msgspec refuses to read it. Each fast path stays; only what it refuses for a surrogate goes
through the standard library, which writes and reads the escape.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import orjson
from litestar import Response
from litestar.response.base import MEDIA_TYPE_APPLICATION_JSON_PATTERN
from litestar.serialization import default_serializer
from litestar.types import Serializer
from pydantic import BaseModel

_SURROGATE = re.compile("[\ud800-\udfff]")
#: A surrogate's escape in JSON text (upper or lower case hex, as a client may write it).
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _escaped_json(value: Any) -> bytes:
    """Plain JSON types as compact UTF-8 JSON, each lone surrogate written as its ``\\u``
    escape (the only place one can stand in JSON text is inside a string)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _SURROGATE.sub(_escape, text).encode()


def _no_hook(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _with_models(enc_hook: Serializer) -> Serializer:
    """``enc_hook``, with pydantic models dumped as Python values: pydantic's JSON mode turns a
    surrogate in a ``dict[str, ...]`` key into U+FFFD silently, where msgspec refuses it."""

    def hook(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="python")
        return enc_hook(value)

    return hook


def json_bytes(value: Any, enc_hook: Serializer = _no_hook) -> bytes:
    """``value`` (JSON types, pydantic models, what msgspec writes, what ``enc_hook`` turns into
    those) as compact UTF-8 JSON; a lone surrogate is written as its escape."""
    hook = _with_models(enc_hook)
    try:
        return msgspec.json.encode(value, enc_hook=hook)
    except UnicodeEncodeError:  # a surrogate: msgspec writes UTF-8 only
        return _escaped_json(msgspec.to_builtins(value, enc_hook=hook))


def dumps(value: Any) -> bytes:
    """``orjson.dumps(value)``, or ``json_bytes`` when it holds a lone surrogate."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: "str is not valid UTF-8: surrogates not allowed"
        return json_bytes(value)


class JsonResponse(Response[Any]):
    """Litestar's response, whose JSON body may hold a lone surrogate (written escaped)."""

    def render(
        self, content: Any, media_type: str, enc_hook: Serializer = default_serializer
    ) -> bytes:
        if isinstance(content, bytes | str) or not MEDIA_TYPE_APPLICATION_JSON_PATTERN.match(
            media_type
        ):
            return super().render(content, media_type, enc_hook)
        return json_bytes(content, enc_hook)


def utf8_text(body: bytes) -> str:
    """The body as text; ``ValueError`` in a sentence when it is not UTF-8."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"the request body is not UTF-8 text (byte {exc.start} is not); send JSON as "
            "UTF-8 (a lone surrogate as its escape, such as \\udce9)"
        ) from None


def holds_escaped_surrogate(body: bytes) -> bool:
    """Does this JSON text hold a surrogate's escape (``\\udce9``)?"""
    return _ESCAPED_SURROGATE.search(body) is not None


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text} is out of range")
    return number


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str) -> Any:
    """JSON text as the standard library reads it (lone surrogate escapes too), refusing what
    msgspec refuses besides (NaN, Infinity, numbers out of a float's range)."""
    return json.loads(text, parse_float=_finite, parse_constant=_no_constant)
