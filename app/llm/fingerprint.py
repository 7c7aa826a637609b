"""Request fingerprints and message hashes: the same request always gives the same hex.

Replay compares fingerprints to find where a new agent version asks something different, so
volatile fields (tool call ids, which providers and agents mint at random) are left out.
"""

from __future__ import annotations

import hashlib
from typing import Any

from app.events.canonical import canonical_json

VOLATILE_KEYS = frozenset({"id", "tool_call_id", "created", "timestamp"})


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _stable(item) for key, item in value.items() if key not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


def content_hash(value: Any) -> str:
    """sha256 hex of the canonical JSON of ``value`` (how prompt messages are stored)."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def stable_hash(message: dict[str, Any]) -> str:
    """sha256 hex of a message without its volatile fields."""
    return content_hash(_stable(message))


def fingerprint(
    model: str, message_hashes: list[str], tools_hash: str, params: dict[str, Any]
) -> str:
    """sha256 hex of the request: the model, its parameters, the tools, and each message's
    ``stable_hash`` in order (so identical requests match whatever ids they carried)."""
    return content_hash(
        {"model": model, "messages": message_hashes, "tools": tools_hash, "params": params}
    )


class PromptDigest:
    """``fingerprint`` for a prompt that grows at the end, at the cost of what was added.

    The fingerprint is the sha256 of canonical JSON whose first key is ``messages``, so the
    text up to the last message hash is a prefix shared by every later request of the same
    conversation. The hash state of that prefix is kept; a request's fingerprint feeds a copy
    of it the rest (model, parameters, tools). Equal to ``fingerprint`` by construction
    (tested), so recordings made either way compare.
    """

    def __init__(self) -> None:
        self._state = hashlib.sha256(b'{"messages":[')
        self.count = 0
        #: the last request's (model, tools hash, parameters) and the text they end it with:
        #: the same for every step of a session, so made once
        self._rest: tuple[str, str, dict[str, Any], bytes] | None = None

    def add(self, stable_hashes: list[str]) -> None:
        """The next messages' ``stable_hash`` es, in order."""
        for stable in stable_hashes:
            text = canonical_json(stable)
            self._state.update((f",{text}" if self.count else text).encode())
            self.count += 1

    def fingerprint(self, model: str, tools_hash: str, params: dict[str, Any]) -> str:
        known = self._rest
        if known is None or (known[0], known[1], known[2]) != (model, tools_hash, params):
            rest = (
                f'],"model":{canonical_json(model)},"params":{canonical_json(params)},'
                f'"tools":{canonical_json(tools_hash)}}}'
            )
            known = self._rest = (model, tools_hash, dict(params), rest.encode())
        state = self._state.copy()
        state.update(known[3])
        return state.hexdigest()
