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


def fingerprint(
    model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], params: dict[str, Any]
) -> str:
    """sha256 hex of the request without volatile fields."""
    return content_hash(
        {"model": model, "messages": _stable(messages), "tools": tools, "params": params}
    )
