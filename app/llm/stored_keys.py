"""The content hashes a gateway knows are stored, the most recent ones only.

The gateway asks before handing a message to be stored whether it was stored already, so a
message is sent to ``llm_messages`` once. Remembering every hash of a session grew with it
(~0.4 KB a step of a replay: two 64-character hashes and a set slot); a conversation only
ever asks about its newest messages (the older ones are known stored by position: the
request's ``stored``) and the tool list (asked every step, so always recent). Forgetting an
old hash costs at most sending that message again, which the store ignores.
"""

from __future__ import annotations

from collections.abc import Iterable

#: hashes remembered (~0.5 MB at most)
KEEP = 4096


class StoredKeys:
    """A set of the last ``keep`` keys added (adding one again makes it recent)."""

    __slots__ = ("_keep", "_keys")

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._keys: dict[str, None] = {}

    def add(self, key: str) -> None:
        keys = self._keys
        if key in keys:
            del keys[key]  # made recent below
        elif len(keys) >= self._keep:
            del keys[next(iter(keys))]  # the oldest
        keys[key] = None

    def update(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.add(key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)
