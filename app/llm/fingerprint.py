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
