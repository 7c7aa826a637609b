"""Compact indexes of seqs: what a replay keeps of a recording for every step.

A replay's index of the recording lives as long as the replay, so its size a step is part of
the replay's memory a step. A dict of ints costs ~100 bytes an entry (the slot, two int
objects); these keep 8 bytes a number in ``array('q')`` and find a key by bisection, so the
index costs ~30 bytes a step instead of ~300.
"""

from __future__ import annotations

import bisect
from array import array

#: seqs in order, 8 bytes each
Seqs = array


def _sorted_pairs(keys: array[int], values: array[int]) -> tuple[array[int], array[int]]:
    """The pairs ordered by key (stable: a key's values keep their order)."""
    if all(keys[i] <= keys[i + 1] for i in range(len(keys) - 1)):
        return keys, values
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return array("q", (keys[i] for i in order)), array("q", (values[i] for i in order))


class SeqGroups:
    """Seqs grouped by a key seq (a call seq -> the seqs of what it led to), in the order
    added within a group. ``add`` in any key order; ``finish`` before looking up."""

    __slots__ = ("_keys", "_values")

    def __init__(self) -> None:
        self._keys = array("q")
        self._values = array("q")

    def add(self, key: int, value: int) -> None:
        self._keys.append(key)
        self._values.append(value)

    def finish(self) -> SeqGroups:
        self._keys, self._values = _sorted_pairs(self._keys, self._values)
        return self

    def of(self, key: int) -> array[int]:
        """The seqs grouped under ``key`` (empty when none)."""
        low = bisect.bisect_left(self._keys, key)
        high = bisect.bisect_right(self._keys, key, low)
        return self._values[low:high]

    def __len__(self) -> int:
        return len(self._keys)


class SeqMap:
    """A seq -> seq map (an action -> its observation); a key set again answers with its
    last value, as a dict would. ``set`` in key order, or ``finish`` before looking up."""

    __slots__ = ("_keys", "_values")

    def __init__(self) -> None:
        self._keys = array("q")
        self._values = array("q")

    def set(self, key: int, value: int) -> None:
        self._keys.append(key)
        self._values.append(value)

    def finish(self) -> SeqMap:
        self._keys, self._values = _sorted_pairs(self._keys, self._values)
        return self

    def get(self, key: int) -> int | None:
        """The value last set for ``key``, or None."""
        high = bisect.bisect_right(self._keys, key)
        if high == 0 or self._keys[high - 1] != key:
            return None
        return self._values[high - 1]

    def __len__(self) -> int:
        return len(self._keys)
