"""The compact seq indexes answer as the dicts they replace did, in any order of adding."""

from __future__ import annotations

import random

from app.replay.seqs import SeqGroups, SeqMap


def test_groups_keep_the_order_added_within_a_key_whatever_the_key_order() -> None:
    pairs = [(10, 11), (10, 12), (20, 21), (15, 16), (10, 30), (20, 22)]
    groups = SeqGroups()
    expected: dict[int, list[int]] = {}
    for key, value in pairs:
        groups.add(key, value)
        expected.setdefault(key, []).append(value)
    groups.finish()
    for key, values in expected.items():
        assert list(groups.of(key)) == values
    assert list(groups.of(13)) == []
    assert list(groups.of(99)) == []
    assert len(groups) == len(pairs)


def test_map_answers_as_a_dict_over_random_orders() -> None:
    rng = random.Random(7)
    for _ in range(50):
        keys = rng.sample(range(1, 200), 40)
        seq_map, expected = SeqMap(), {}
        for key in keys + keys[:5]:  # a key set again keeps its last value
            value = rng.randrange(1000)
            seq_map.set(key, value)
            expected[key] = value
        seq_map.finish()
        for key in range(0, 202):
            assert seq_map.get(key) == expected.get(key)


def test_a_map_set_in_key_order_needs_no_finish() -> None:
    seq_map = SeqMap()
    for key in (3, 5, 9):
        seq_map.set(key, key * 10)
    assert [seq_map.get(k) for k in (2, 3, 5, 9, 10)] == [None, 30, 50, 90, None]
