"""Object keys with lone surrogates, which pydantic's JSON mode cannot carry.

An event's free-form JSON (an MCP call's arguments, a model call's parameters, a usage object
as the provider sent it, a tool's structured content) comes from outside, and JSON allows a
lone surrogate in an object key (``{"caf\\udce9": 1}``). pydantic's JSON mode turns such a key's
surrogate into U+FFFD (a key of a ``dict[str, Any]``) or raises ``UnicodeEncodeError`` (a key
under ``Any``), so the log would silently change or refuse what was sent. The store's stored
form carries such keys (``app.events.stored_form``); only the dump before it lost them.

So a model class's *free fields* (those whose type reaches ``Any``) are found once, and an
event whose free field holds such a key dumps that field in Python mode, turning only the
values JSON has no type for (a UUID, a datetime) into what JSON mode would have written.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from app.events.stored_form import needs_escape

_JSON_SCALARS = (str, int, float, bool, type(None))
#: The same as a set of exact types, for ``type(value) in``: a hash lookup, no ABC check.
_SCALAR_TYPES = frozenset(_JSON_SCALARS)


def _reaches_any(annotation: Any, seen: set[type]) -> bool:
    if annotation is Any:
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return False
        seen.add(annotation)
        if annotation.model_config.get("extra") == "allow":  # its unknown keys hold anything
            return True
        return any(_reaches_any(f.annotation, seen) for f in annotation.model_fields.values())
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _reaches_any(typing.get_args(annotation)[0], seen)
    if origin is not None or isinstance(annotation, types.UnionType):
        return any(_reaches_any(arg, seen) for arg in typing.get_args(annotation))
    return False


def free_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields of ``model`` whose values may hold objects with keys of any text."""
    return frozenset(
        name for name, info in model.model_fields.items() if _reaches_any(info.annotation, set())
    )


def holds_surrogate_key(value: Any) -> bool:
    """Does ``value`` hold, at any depth, an object key the stored form escapes (a lone
    surrogate, or NUL, which JSON mode keeps but costs nothing to dump exactly too)?"""
    kind = type(value)
    if kind in _SCALAR_TYPES:  # most values, and a payload's own containers next: no ABC check
        return False
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        for key, item in value.items():
            if isinstance(key, str) and needs_escape(key):
                return True
            if type(item) not in _SCALAR_TYPES and holds_surrogate_key(item):
                return True
        return False
    if isinstance(value, list | tuple):
        return any(type(item) not in _SCALAR_TYPES and holds_surrogate_key(item) for item in value)
    if isinstance(value, BaseModel):
        extra = value.__pydantic_extra__ or {}
        return any(
            holds_surrogate_key(item) for item in (*value.__dict__.values(), *extra.values())
        ) or any(needs_escape(key) for key in extra)
    return False


def jsonable_keeping_keys(value: Any) -> Any:
    """A Python-mode dump as JSON mode would have written it, its keys left as they are."""
    if isinstance(value, _JSON_SCALARS):
        return value
    if isinstance(value, Mapping):
        return {key: jsonable_keeping_keys(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable_keeping_keys(item) for item in value]
    return to_jsonable_python(value)
