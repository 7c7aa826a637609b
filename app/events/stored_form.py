"""The stored form of a JSON value: text PostgreSQL can hold, large strings by reference.

``jsonb`` cannot hold NUL (U+0000), UTF-8 cannot hold a lone surrogate (``"caf\\udce9"``, which
JSON and Python allow), and an event has a size limit. So what the log stores (and hashes) is
the value with three kinds of marker, each an object with a reserved key:

``{"$esc": "<escaped>"}``
    a string holding NUL or surrogates. In ``<escaped>`` a backslash is written ``\\\\``, NUL
    ``\\0`` and each surrogate ``\\udce9`` (four lower-case hex digits); nothing else changes.
``{"$obj": [[key, value], ...]}``
    an object with a key that needs escaping (written as ``{"$esc": ...}``) or with a key of
    its own that is reserved (``$esc``, ``$obj``, ``$blob``); its pairs in key order.
``{"$blob": "<sha256 hex>", "chars": N}``
    a string longer than the blob threshold, stored once in the ``blobs`` table under the
    sha256 of its UTF-8 text (N characters). A long escaped string is an ``$esc`` whose
    escaped text is a ``$blob``.
``{"$redacted": "<sha256 hex>", "was": "<JSON type>"}``
    a part that was redacted (``app.events.commitment``): its digest in the payload's tree
    commitment, and its type. A reader gets an empty value of that type in its place
    (``PLACEHOLDERS``: a string reads ``[redacted]``).

Everything else is stored as it is, so most values are their own stored form. The form is
unambiguous: a genuine object with a reserved key is always written as ``$obj`` pairs, so an
object with a reserved key in a stored value is always a marker. ``restore`` reverses it
exactly; writing it is ``app.events.canonical``'s job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.errors import ChronicleError

ESC = "$esc"
OBJ = "$obj"
BLOB = "$blob"
CHARS = "chars"
REDACTED = "$redacted"
RESERVED_KEYS = frozenset({ESC, OBJ, BLOB, REDACTED})
#: What a reader gets in place of a redacted part, by the JSON type it was.
PLACEHOLDERS: dict[str, Any] = {
    "string": "[redacted]",
    "number": 0,
    "boolean": False,
    "null": None,
    "array": [],
    "object": {},
}

_NEEDS_ESCAPE = re.compile("[\x00\ud800-\udfff]")
_TO_ESCAPE = re.compile("[\\\\\x00\ud800-\udfff]")
_ESCAPE_SEQUENCE = re.compile(r"\\(?:(\\)|(0)|u(d[89a-f][0-9a-f]{2})|)")
_SHA256_HEX = re.compile("[0-9a-f]{64}")


class StoredFormError(ChronicleError, ValueError):
    """A stored value holds a malformed marker (the table was edited, or a writer is broken)."""


def needs_escape(text: str) -> bool:
    """Does this string hold what jsonb or UTF-8 cannot (NUL, a surrogate)?"""
    return "\x00" in text or _NEEDS_ESCAPE.search(text) is not None


def _escape_one(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\\":
        return "\\\\"
    if char == "\x00":
        return "\\0"
    return f"\\u{ord(char):04x}"


def escape_text(text: str) -> str:
    """``text`` with backslash, NUL and surrogates written as escapes (see the module)."""
    return _TO_ESCAPE.sub(_escape_one, text)


def _unescape_one(match: re.Match[str]) -> str:
    backslash, nul, surrogate = match.groups()
    if backslash:
        return "\\"
    if nul:
        return "\x00"
    if surrogate:
        return chr(int(surrogate, 16))
    raise StoredFormError(f"unknown escape {match.group()!r} in an escaped string")


def unescape_text(escaped: str) -> str:
    """The string ``escape_text`` was given."""
    if "\\" not in escaped:
        return escaped
    return _ESCAPE_SEQUENCE.sub(_unescape_one, escaped)


def blob_reference(key: str, chars: int) -> dict[str, Any]:
    return {BLOB: key, CHARS: chars}


# -- reading ------------------------------------------------------------------------------


def holds_markers(json_text: str) -> bool:
    """Could this JSON text (compact, or jsonb's output) hold a marker? The cheap test that
    lets a reader skip the walk: a reserved key appears in the text as ``"$esc"``,
    ``"$obj"``, ``"$blob"`` or ``"$redacted"`` (a quote inside a string is always escaped)."""
    return '"$' in json_text and (
        '"$blob"' in json_text
        or '"$esc"' in json_text
        or '"$obj"' in json_text
        or '"$redacted"' in json_text
    )


class EncodedObject(dict[str, Any]):
    """A decoded stored object that holds markers: ``restore`` gives the value it stands for.

    The store's jsonb decoder tags what ``holds_markers`` flags, so a reader walks only those.
    It is still an ordinary dict to everyone else.
    """


class EncodedArray(list[Any]):
    """A decoded stored array that holds markers (see ``EncodedObject``)."""


def tagged(value: Any, json_text: str) -> Any:
    """``value`` (decoded from ``json_text``) tagged when its text holds markers."""
    if not holds_markers(json_text):
        return value
    if type(value) is dict:
        return EncodedObject(value)
    if type(value) is list:
        return EncodedArray(value)
    return value  # a bare string "$blob" is no marker


def is_encoded(value: Any) -> bool:
    return type(value) is EncodedObject or type(value) is EncodedArray


class RestoredObject(dict[str, Any]):
    """A value whose stored form differs (it held escapes or blobs), with that form kept in
    ``stored``: what the hash chain covers."""

    stored: Any

    @classmethod
    def of(cls, value: Mapping[str, Any], stored: Any) -> RestoredObject:
        restored = cls(value)
        restored.stored = stored
        return restored


def stored_form(value: Any) -> Any:
    """The stored form of a payload as a reader got it: a restored one's ``stored``, else
    the value itself (it had no markers, or was read as stored)."""
    return value.stored if type(value) is RestoredObject else value


def references(stored: Any) -> set[str]:
    """The blob keys (sha256 hex) a stored value refers to."""
    found: set[str] = set()
    _collect(stored, found)
    return found


def _collect(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        key = value.get(BLOB)
        if isinstance(key, str) and len(value) == 2 and CHARS in value:
            found.add(key)
            return
        for item in value.values():
            _collect(item, found)
    elif isinstance(value, list):
        for item in value:
            _collect(item, found)


def restore(stored: Any, blobs: Mapping[str, str]) -> Any:
    """The value a stored form stands for; ``blobs`` maps each referenced key to its text.

    A payload object comes back as a ``RestoredObject`` that keeps ``stored``. Raises
    ``StoredFormError`` on a malformed marker and ``KeyError`` for a blob not in ``blobs``.
    """
    value = _restore(stored, blobs)
    if isinstance(value, dict) and value is not stored:
        return RestoredObject.of(value, stored)
    return value


def _restore(value: Any, blobs: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        if ESC in value or OBJ in value or BLOB in value or REDACTED in value:
            return _marker(value, blobs)
        return {key: _restore(item, blobs) for key, item in value.items()}
    if isinstance(value, list):
        return [_restore(item, blobs) for item in value]
    return value


def _marker(marker: dict[str, Any], blobs: Mapping[str, str]) -> Any:
    if BLOB in marker:
        return _blob_text(marker, blobs)
    if REDACTED in marker:
        was = marker.get("was", "null")
        if not set(marker) <= {REDACTED, "was"} or was not in PLACEHOLDERS:
            raise StoredFormError(f"malformed redaction marker {marker!r}")
        placeholder = PLACEHOLDERS[was]
        return type(placeholder)() if isinstance(placeholder, (list, dict)) else placeholder
    if len(marker) != 1:
        raise StoredFormError(f"a marker object has other keys: {sorted(marker)}")
    if ESC in marker:
        inner = marker[ESC]
        if isinstance(inner, dict):
            return unescape_text(_blob_text(inner, blobs))
        if not isinstance(inner, str):
            raise StoredFormError(f"{ESC} holds a {type(inner).__name__}, not a string")
        return unescape_text(inner)
    pairs = marker[OBJ]
    if not isinstance(pairs, list):
        raise StoredFormError(f"{OBJ} holds a {type(pairs).__name__}, not a list of pairs")
    out: dict[str, Any] = {}
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2):
            raise StoredFormError(f"{OBJ} holds {pair!r}, not a [key, value] pair")
        key = _key(pair[0])
        if key in out:
            raise StoredFormError(f"{OBJ} holds the key {key!r} twice")
        out[key] = _restore(pair[1], blobs)
    return out


def _key(stored: Any) -> str:
    if isinstance(stored, str):
        return stored
    if isinstance(stored, dict) and len(stored) == 1 and isinstance(stored.get(ESC), str):
        return unescape_text(stored[ESC])
    raise StoredFormError(f"an object key is stored as {stored!r}")


def _blob_text(reference: dict[str, Any], blobs: Mapping[str, str]) -> str:
    key = reference.get(BLOB)
    if set(reference) != {BLOB, CHARS} or not isinstance(key, str):
        raise StoredFormError(f"malformed blob reference {reference!r}")
    if not _SHA256_HEX.fullmatch(key):
        raise StoredFormError(f"blob reference {key!r} is not a sha256 hex digest")
    return blobs[key]
