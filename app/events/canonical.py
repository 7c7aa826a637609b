"""Canonical JSON and hashing: the one place that decides which bytes an event hashes to.

The hash chain is only verifiable if every writer and reader turns the same event into the
same bytes. Canonical JSON here means: keys sorted, no whitespace, UTF-8 (no ASCII escaping),
no NaN/Infinity, and numbers normalised so that a value survives a round trip through
PostgreSQL ``jsonb`` unchanged: an integral float is written as an integer (``1.0`` -> ``1``),
any other float as Python's shortest round-trip ``repr``.

What is written is the value's *stored form* (see ``app.events.stored_form``): a string
holding NUL or lone surrogates is escaped reversibly, an object with such a key or with a
reserved key of its own becomes key/value pairs, and with a blob threshold a long string
becomes a reference to a blob. Most values are their own stored form; finding that out costs
one walk that was needed anyway (numbers) and a few substring tests of the text.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, NamedTuple

import orjson

from app.errors import ChronicleError
from app.events.stored_form import (
    ESC,
    OBJ,
    RESERVED_KEYS,
    blob_reference,
    escape_text,
    needs_escape,
)

_encoder = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
#: What orjson is asked for: the same sorted, compact, unescaped UTF-8 as ``_encoder``.
_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS
#: A number token with a fraction or an exponent inside an object or array in orjson's
#: output: a float, which orjson formats its own way (``1e-7`` where ``repr`` gives ``1e-07``).
#: Also matches such text inside a string (``"a:1.5"``); then the text is made again by
#: ``_encoder``, which is only slower.
_FLOAT_TOKEN = re.compile(rb"[:,\[]-?[0-9]+[.eE]")
#: How orjson's output of an object, an array or a string begins (any other is a scalar).
_CONTAINER_START = frozenset(b'{["')
#: A reserved key in canonical (compact) JSON text: a key is always followed by ``":``.
_RESERVED_KEY_TOKENS = tuple(f'"{key}":' for key in sorted(RESERVED_KEYS))


def _holds_reserved_key(text: str) -> bool:
    return any(token in text for token in _RESERVED_KEY_TOKENS)


class CanonicalJsonError(ChronicleError, ValueError):
    """A value cannot be represented as canonical JSON (and so cannot be stored)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"value: {reason}")
        self.reason = reason
        self.path: list[str] = []

    def inside(self, step: str) -> CanonicalJsonError:
        """Record, while unwinding, that the problem is inside ``step`` (a key or ``[i]``)."""
        self.path.append(step)
        where = "".join(
            part if part.startswith("[") else f".{part}" for part in reversed(self.path)
        ).removeprefix(".")
        self.args = (f"{where}: {self.reason}",)
        return self


class _NotItsOwnStoredForm(ChronicleError):
    """The fast walk met something that needs the stored form's markers."""


class Encoded(NamedTuple):
    """A value ready to be stored."""

    #: The value, normalised: what a reader gets back.
    value: Any
    #: Canonical JSON of the stored form: what is stored and hashed.
    text: str
    #: The stored form (``value`` itself unless ``marked``).
    stored: Any
    #: sha256 hex -> text of each string moved to a blob.
    blobs: Mapping[str, str]
    #: The stored form differs from the value (it holds escapes, pairs or blob references).
    marked: bool


_NO_BLOBS: Mapping[str, str] = MappingProxyType({})
#: Builds an ``Encoded`` at half the cost of its generated ``__new__`` (every append uses it).
_new_tuple = tuple.__new__


def _json_text(normalised: Any) -> str:
    """``_encoder.encode(normalised)``, byte for byte, at a tenth of its cost when it can.

    orjson writes sorted keys (code point order, as Python sorts ``str``), no whitespace and
    UTF-8 with the same escapes (``\\"``, ``\\\\``, ``\\n``-style, ``\\u00XX`` for other
    controls, nothing else). It differs on floats (its own shortest form) and refuses what it
    cannot write as the standard library does (integers beyond 64 bits, lone surrogates, deep
    nesting): those go to ``_encoder``. tests/unit/events/test_canonical_orjson.py holds the two
    side by side over generated values.
    """
    try:
        data = orjson.dumps(normalised, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _encoder.encode(normalised)
    if data[0] not in _CONTAINER_START or _FLOAT_TOKEN.search(data):
        return _encoder.encode(normalised)
    return data.decode()


def _number(value: float) -> float | int:
    if value != value or value in (float("inf"), float("-inf")):
        raise CanonicalJsonError("NaN and Infinity are not JSON")
    return int(value) if value.is_integer() else value


def _longer_than(text: str, limit: int) -> bool:
    """Is ``text`` over ``limit`` bytes of UTF-8? (The length alone usually tells.)"""
    if len(text) > limit:
        return True
    if len(text) * 4 <= limit:
        return False
    return len(text.encode("utf-8", "surrogatepass")) > limit


def _normalise(value: Any, limit: int) -> Any:
    """``value`` with integral floats made ints, when it is its own stored form (no NUL, no
    string over ``limit`` bytes); raises ``_NotItsOwnStoredForm`` when it may not be."""
    if type(value) is dict:  # a payload's own type first: no ABC check for it
        return _normalise_object(value, limit)
    if isinstance(value, str):
        if "\x00" in value or (len(value) * 4 > limit and _longer_than(value, limit)):
            raise _NotItsOwnStoredForm
        return value
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, Mapping):
        return _normalise_object(value, limit)
    if isinstance(value, list | tuple):
        items = []
        for index, item in enumerate(value):
            leaf = type(item)
            if leaf is str:  # the common leaves inline, as in objects
                if "\x00" in item or (len(item) * 4 > limit and _longer_than(item, limit)):
                    raise _NotItsOwnStoredForm
                items.append(item)
            elif leaf is int or leaf is bool or item is None:
                items.append(item)
            else:
                try:
                    items.append(_normalise(item, limit))
                except CanonicalJsonError as exc:
                    raise exc.inside(f"[{index}]") from None
        return items
    raise CanonicalJsonError(f"{type(value).__name__} is not JSON")


def _normalise_object(value: Mapping[Any, Any], limit: int) -> dict[str, Any]:
    out = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise CanonicalJsonError(f"object keys must be strings, not {key!r}")
        if "\x00" in key:
            raise _NotItsOwnStoredForm
        leaf = type(item)
        if leaf is str:  # the common leaves inline: a call per string saved
            if "\x00" in item or (len(item) * 4 > limit and _longer_than(item, limit)):
                raise _NotItsOwnStoredForm
            out[key] = item
        elif leaf is int or leaf is bool or item is None:
            out[key] = item
        else:
            try:
                out[key] = _normalise(item, limit)
            except CanonicalJsonError as exc:
                raise exc.inside(key) from None
    return out


class _StoredFormWriter:
    """The slow walk: builds the normalised value and its stored form side by side, sharing
    every subtree that needs no marker."""

    def __init__(self, blob_threshold: int | None) -> None:
        self.threshold = blob_threshold
        self.blobs: dict[str, str] = {}

    def write(self, value: Any) -> tuple[Any, Any]:
        if isinstance(value, str):
            return value, self._string(value)
        if isinstance(value, bool) or value is None or isinstance(value, int):
            return value, value
        if isinstance(value, float):
            number = _number(value)
            return number, number
        if isinstance(value, Mapping):
            return self._object(value)
        if isinstance(value, list | tuple):
            normalised, stored, same = [], [], True
            for index, item in enumerate(value):
                try:
                    plain, kept = self.write(item)
                except CanonicalJsonError as exc:
                    raise exc.inside(f"[{index}]") from None
                normalised.append(plain)
                stored.append(kept)
                same = same and kept is plain
            return normalised, normalised if same else stored
        raise CanonicalJsonError(f"{type(value).__name__} is not JSON")

    def _object(self, value: Mapping[Any, Any]) -> tuple[Any, Any]:
        normalised: dict[str, Any] = {}
        stored: dict[str, Any] = {}
        same, as_pairs = True, False
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalJsonError(f"object keys must be strings, not {key!r}")
            try:
                plain, kept = self.write(item)
            except CanonicalJsonError as exc:
                raise exc.inside(key) from None
            normalised[key] = plain
            stored[key] = kept
            same = same and kept is plain
            as_pairs = as_pairs or key in RESERVED_KEYS or needs_escape(key)
        if as_pairs:
            pairs = [[self._key(key), stored[key]] for key in sorted(stored)]
            return normalised, {OBJ: pairs}
        return normalised, normalised if same else stored

    @staticmethod
    def _key(key: str) -> Any:
        return {ESC: escape_text(key)} if needs_escape(key) else key

    def _string(self, text: str) -> Any:
        if needs_escape(text):
            return {ESC: self._text(escape_text(text))}
        return self._text(text)

    def _text(self, text: str) -> Any:
        """A storable string, or a reference to the blob it becomes."""
        if self.threshold is None or not _longer_than(text, self.threshold):
            return text
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self.blobs[key] = text
        return blob_reference(key, len(text))


def encode(value: Any, *, blob_threshold: int | None = None) -> Encoded:
    """``value``'s stored form and its canonical text; with ``blob_threshold`` (bytes), every
    string longer than that is moved to a blob. Raises ``CanonicalJsonError`` for what is not
    JSON at all (NaN, Infinity, non-string keys, other types)."""
    limit = sys.maxsize if blob_threshold is None else blob_threshold
    try:
        normalised = _normalise(value, limit)
    except _NotItsOwnStoredForm:
        pass
    else:
        text = _json_text(normalised)
        if '"$' not in text or not _holds_reserved_key(text):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                pass  # a surrogate somewhere
            else:
                return _new_tuple(Encoded, (normalised, text, normalised, _NO_BLOBS, False))
    writer = _StoredFormWriter(blob_threshold)
    normalised, stored = writer.write(value)
    return Encoded(
        normalised, _encoder.encode(stored), stored, writer.blobs, stored is not normalised
    )


def canonicalise(value: Any) -> tuple[Any, str]:
    """The normalised value and the canonical text of its stored form (no blobs)."""
    encoded = encode(value)
    return encoded.value, encoded.text


def canonical_json(value: Any) -> str:
    """Serialise ``value`` as canonical JSON text (of its stored form, without blobs)."""
    return encode(value).text


def stored_json(stored: Any) -> str:
    """Canonical text of a value that is already in stored form (read back from the table):
    its markers are written as they are. What verification re-hashes."""
    try:
        text = _json_text(_normalise(stored, sys.maxsize))
        text.encode("utf-8")
    except (_NotItsOwnStoredForm, UnicodeEncodeError):
        raise CanonicalJsonError(
            "holds NUL or a lone surrogate, which no stored value can (was it restored?)"
        ) from None
    return text


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def format_timestamp(moment: datetime) -> str:
    """UTC with microseconds, the form the database uses when it hashes ``created_at``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def hashed_document(
    *,
    session_id: str,
    seq: int,
    event_id: str,
    kind: str,
    source: str,
    cause: int | None,
    payload: Any,
    schema_version: int,
    created_at: datetime,
) -> str:
    """Canonical JSON of an event without its hash: the bytes the chain is built over.

    ``payload`` is the payload's stored form. The append function in the database (see the
    migrations) assembles exactly this text; ``EventStore.verify`` recomputes it from the
    stored columns.
    """
    return stored_json(
        {
            "cause": cause,
            "created_at": format_timestamp(created_at),
            "event_id": event_id,
            "kind": kind,
            "payload": payload,
            "schema_version": schema_version,
            "seq": seq,
            "session_id": session_id,
            "source": source,
        }
    )


def chain_hash(previous: bytes, document: str) -> bytes:
    """sha256(previous event's hash ‖ canonical JSON of this event)."""
    return sha256(previous + document.encode("utf-8"))
