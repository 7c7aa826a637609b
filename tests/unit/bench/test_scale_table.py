"""The scale benchmark's sizes and its ratio table."""

from __future__ import annotations

import pytest

from bench.scale_table import (
    Figure,
    SizeError,
    markdown,
    parse_size,
    parse_sizes,
    ratio_rows,
    size_label,
)


@pytest.mark.parametrize(
    ("text", "events"),
    [("1M", 1_000_000), ("10m", 10_000_000), ("2.5M", 2_500_000), ("2k", 2_000), ("750", 750)],
)
def test_sizes_are_read_and_named(text: str, events: int) -> None:
    assert parse_size(text) == events
    assert parse_size(size_label(events)) == events


def test_size_names() -> None:
    assert [size_label(n) for n in (10_000_000, 1_000_000, 3_000_000, 500_000, 2_000)] == [
        "10M", "1M", "3M", "500k", "2k",
    ]  # fmt: skip


@pytest.mark.parametrize("text", ["", "ten", "1G", "-1M", "0", "1M,"])
def test_a_bad_size_is_refused(text: str) -> None:
    with pytest.raises(SizeError):
        parse_size(text)


def test_sizes_are_sorted_and_each_once() -> None:
    assert parse_sizes("10M, 1M,1m") == [1_000_000, 10_000_000]
    with pytest.raises(SizeError):
        parse_sizes(" , ")


def test_the_ratio_is_the_median_of_each_rounds_ratio() -> None:
    figure = Figure(name="append p99", unit="ms")
    [row] = ratio_rows(figure, {"1M": [1.0, 2.0, 4.0], "10M": [1.2, 2.0, 40.0]})
    assert row.ratios == [1.2, 1.0, 10.0]
    assert row.ratio == 1.2  # not median(10M) / median(1M) = 1.0, not the mean
    assert (row.base, row.value, row.size, row.base_size) == (2.0, 2.0, "10M", "1M")
    assert row.met and row.target == "<= 1.5x"


def test_flat_means_within_one_and_a_half_either_way() -> None:
    slower = Figure(name="rebuild", unit="s")
    rate = Figure(name="verify", unit="events/s", better="higher")
    assert not ratio_rows(slower, {"1M": [10.0], "10M": [16.0]})[0].met
    assert ratio_rows(slower, {"1M": [10.0], "10M": [15.0]})[0].met
    assert ratio_rows(rate, {"1M": [90.0], "10M": [60.0]})[0].met
    assert not ratio_rows(rate, {"1M": [90.0], "10M": [59.0]})[0].met


def test_every_larger_size_gets_a_row_against_the_first() -> None:
    figure = Figure(name="size", unit="MB")
    rows = ratio_rows(figure, {"1M": [100.0], "3M": [110.0], "10M": [120.0]})
    assert [(r.size, r.base_size, round(r.ratio, 2)) for r in rows] == [
        ("3M", "1M", 1.1), ("10M", "1M", 1.2),
    ]  # fmt: skip


def test_rounds_must_pair_up() -> None:
    with pytest.raises(ValueError, match="rounds"):
        ratio_rows(Figure(name="x", unit="s"), {"1M": [1.0, 2.0], "10M": [1.0]})


def test_the_table_has_a_line_per_row() -> None:
    rows = ratio_rows(Figure(name="read p50", unit="ms"), {"1M": [1.0, 3.0], "10M": [2.0, 3.0]})
    table = markdown(rows).splitlines()
    assert len(table) == 3
    assert table[2].startswith("| read p50 (ms) | 10M | 2.50 (2.00-3.00) | 1M | 2.00 (1.00-3.00) |")
    assert "1.50x (1.00-2.00)" in table[2] and table[2].endswith("| <= 1.5x | yes |")
