"""A commitment to a payload that survives the removal of any part of it (issue 29's design).

The hash chain covers each event's payload text, so today no content can go without breaking
``verify``. A *tree commitment* lets it: every node of the payload's stored form has a digest
built from its children's, and a removed subtree is replaced by a marker that keeps its digest,
``{"$redacted": "<sha256 hex>"}``. The payload's commitment (its root digest) is the same
before and after, so a chain built over commitments still verifies, and the marker says what
went, by hash, without holding it (and what JSON type it was, ``"was"``, so a reader can put
an empty value of that type in its place; the type is not part of the digest).

Digests (``salt`` is the event's id, 16 bytes: a value cannot be looked up in a table of
precomputed digests, though someone holding the log who guesses a redacted value exactly can
still confirm the guess, as with any hash):

- a scalar (string, number, boolean, null): sha256(salt ‖ "s" ‖ its canonical JSON text);
- an array: sha256(salt ‖ "a" ‖ its items' digests in order);
- an object: sha256(salt ‖ "o" ‖ for each key, sha256(key) ‖ its value's digest), the pairs in
  the order of sha256(key) (one order every implementation agrees on: the database's too);
- a ``$redacted`` marker: the digest it holds.

Paths are JSON Pointers (RFC 6901: ``/response/content``, ``/tool_calls/0``) into the payload
as the event's model reads it; they are followed through the stored form's ``$obj`` pairs.
A ``$blob`` or ``$esc`` string is one scalar: it is removed whole.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

from app.errors import ChronicleError
from app.events.canonical import stored_json
from app.events.stored_form import BLOB, ESC, OBJ, REDACTED, unescape_text

_HEX = re.compile("[0-9a-f]{64}")


class RedactionPathError(ChronicleError, ValueError):
    """A path that does not name a part of the payload; the message says where it stops."""


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _key_name(stored: Any) -> str:
    """A ``$obj`` pair's key as the event's model reads it (it may be an escaped string)."""
    return unescape_text(stored[ESC]) if isinstance(stored, dict) and ESC in stored else stored


WAS = "was"
#: The JSON types a marker may say its part was.
TYPES = ("string", "number", "boolean", "null", "array", "object")


def is_redacted(node: Any) -> bool:
    """Is this stored node a redaction marker?"""
    return (
        isinstance(node, dict)  # a stored payload read whole is a tagged dict
        and set(node) <= {REDACTED, WAS}
        and isinstance(node.get(REDACTED), str)
        and _HEX.fullmatch(node[REDACTED]) is not None
        and node.get(WAS, "null") in TYPES
    )


def json_type(node: Any) -> str:
    """The JSON type of what a stored node stands for (an escaped or blob string is a string)."""
    if isinstance(node, dict):
        return "string" if set(node) == {ESC} or BLOB in node else "object"
    if isinstance(node, list):
        return "array"
    if isinstance(node, bool):
        return "boolean"
    if isinstance(node, (int, float)):
        return "number"
    return "null" if node is None else "string"


def marker(node: Any, salt: bytes) -> dict[str, str]:
    """What stands in for ``node`` once it is removed."""
    return {REDACTED: digest(node, salt).hex(), WAS: json_type(node)}


def digest(node: Any, salt: bytes) -> bytes:
    """The node's digest (see the module)."""
    if is_redacted(node):
        return bytes.fromhex(node[REDACTED])
    if isinstance(node, dict):
        pairs = sorted((_sha(key.encode("utf-8")), key) for key in node)
        return _sha(
            salt + b"o" + b"".join(hashed + digest(node[key], salt) for hashed, key in pairs)
        )
    if isinstance(node, list):
        return _sha(salt + b"a" + b"".join(digest(item, salt) for item in node))
    return _sha(salt + b"s" + stored_json(node).encode("utf-8"))


def commitment(payload: Any, salt: bytes) -> str:
    """The payload's commitment (hex): its stored form's root digest."""
    return digest(payload, salt).hex()


def parse_pointer(pointer: str) -> list[str]:
    """A JSON Pointer's reference tokens ("" is the whole payload)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise RedactionPathError(
            f"{pointer!r} is not a JSON Pointer: write /field or /field/sub (RFC 6901)"
        )
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def redact(payload: Any, pointer: str, salt: bytes) -> tuple[Any, dict[str, str]]:
    """The payload with the part at ``pointer`` replaced by its marker, and the marker (its
    digest, hex, and JSON type); the whole payload for the pointer "". Raises
    ``RedactionPathError`` for a path that names nothing or a part already redacted."""
    tokens = parse_pointer(pointer)
    if not tokens:
        if is_redacted(payload):
            raise RedactionPathError("the payload is already redacted")
        gone = marker(payload, salt)
        return gone, gone
    return _redact(payload, tokens, salt, "")


def _redact(node: Any, tokens: list[str], salt: bytes, where: str) -> tuple[Any, dict[str, str]]:
    token, rest = tokens[0], tokens[1:]
    here = f"{where}/{token}"
    if is_redacted(node):
        raise RedactionPathError(f"{where or '/'} is already redacted")
    if isinstance(node, dict) and set(node) == {OBJ}:
        return _redact_pairs(node, token, rest, salt, here)
    if isinstance(node, dict) and token in node and set(node) != {ESC}:
        child = node[token]
        new, removed = _replace(child, rest, salt, here)
        return {**node, token: new}, removed
    if isinstance(node, list) and token.isdigit() and int(token) < len(node):
        index = int(token)
        if token != str(index):
            raise RedactionPathError(f"{here}: an array index has no leading zeros")
        new, removed = _replace(node[index], rest, salt, here)
        return [*node[:index], new, *node[index + 1 :]], removed
    raise RedactionPathError(f"the payload has nothing at {here}")


def _redact_pairs(
    node: dict[str, Any], token: str, rest: list[str], salt: bytes, here: str
) -> tuple[Any, dict[str, str]]:
    """Into a ``$obj`` (an object whose keys needed escaping): its pairs are [key, value]."""
    pairs = node[OBJ]
    for index, (key, value) in enumerate(pairs):
        if _key_name(key) == token:
            new, removed = _replace(value, rest, salt, here)
            changed = [*pairs[:index], [key, new], *pairs[index + 1 :]]
            return {OBJ: changed}, removed
    raise RedactionPathError(f"the payload has nothing at {here}")


def _replace(child: Any, rest: list[str], salt: bytes, here: str) -> tuple[Any, dict[str, str]]:
    if rest:
        return _redact(child, rest, salt, here)
    if is_redacted(child):
        raise RedactionPathError(f"{here} is already redacted")
    gone = marker(child, salt)
    return gone, gone


def render_pointer(tokens: list[str]) -> str:
    """The JSON Pointer of these tokens (``parse_pointer``'s inverse, its one spelling)."""
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in tokens)


def markers_in(payload: Any) -> list[tuple[str, str]]:
    """Every redaction marker in a stored payload: (its JSON Pointer, its digest hex), the
    pointer naming keys as the event's model reads them (through ``$obj`` pairs)."""
    return [
        (render_pointer(here), node[REDACTED])
        for here, node in _nodes(payload, [], is_redacted)
        if is_redacted(node)
    ]


def pointers_to(payload: Any, matches: Any) -> list[str]:
    """The JSON Pointers of the stored nodes for which ``matches(node)`` holds (outermost
    first; nothing inside a match is looked at)."""
    return [render_pointer(here) for here, node in _nodes(payload, [], matches) if matches(node)]


def strings_in(part: Any) -> list[str]:
    """The strings a stored part holds (not those inside markers)."""
    return [node for _, node in _nodes(part, [], lambda _: False) if isinstance(node, str)]


def _nodes(node: Any, here: list[str], stop: Any) -> Iterator[tuple[list[str], Any]]:
    """Every node of a stored payload with the tokens of its path, parents first; not into a
    node ``stop`` holds for, nor into a marker that stands for one value (``$esc``,
    ``$blob``, ``$redacted``)."""
    yield here, node
    if stop(node) or is_redacted(node):
        return
    if isinstance(node, dict) and set(node) == {OBJ} and isinstance(node[OBJ], list):
        for pair in node[OBJ]:
            if isinstance(pair, list) and len(pair) == 2:
                yield from _nodes(pair[1], [*here, str(_key_name(pair[0]))], stop)
    elif isinstance(node, dict) and not (set(node) == {ESC} or BLOB in node):
        for key, child in node.items():
            yield from _nodes(child, [*here, key], stop)
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _nodes(child, [*here, str(index)], stop)


def part_at(payload: Any, pointer: str) -> Any:
    """The stored part a JSON Pointer names (through ``$obj`` pairs); ``RedactionPathError``
    when there is none."""
    node = payload
    where = ""
    for token in parse_pointer(pointer):
        where += f"/{token}"
        if isinstance(node, dict) and set(node) == {OBJ} and isinstance(node[OBJ], list):
            for key, value in node[OBJ]:
                if _key_name(key) == token:
                    node = value
                    break
            else:
                raise RedactionPathError(f"the payload has nothing at {where}")
        elif isinstance(node, dict) and token in node and set(node) != {ESC}:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise RedactionPathError(f"the payload has nothing at {where}")
    return node
