"""The scale benchmark's sizes, figures and table: pure code, tested in tests/unit/bench.

Each figure is measured on every size in the same rounds (the sizes' order alternating from
round to round), so the ratio of a round is between two neighbouring measurements; the table
gives each size's median and the median of the per-round ratios against the first (smallest)
size. The goal is flat: a time at most 1.5x the first size's, a rate at least 1/1.5 of it.
"""

from __future__ import annotations

import re
import statistics
from typing import Literal

from pydantic import BaseModel

#: A figure at a larger size within this factor of the first size's is flat.
FLAT = 1.5
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmM]?)\s*$")


class SizeError(ValueError):
    pass


def parse_size(text: str) -> int:
    """Events in ``text``: ``2k``, ``1M``, ``10M``, ``2.5M`` or a plain number."""
    match = _SIZE.match(text)
    if match is None:
        raise SizeError(f"{text!r} is not a size (e.g. 1M, 10M, 500k)")
    number, suffix = float(match.group(1)), match.group(2).lower()
    events = int(number * {"": 1, "k": 1_000, "m": 1_000_000}[suffix])
    if events < 1:
        raise SizeError(f"{text!r}: a size needs at least one event")
    return events


def size_label(events: int) -> str:
    """``1M``, ``10M``, ``2.5M``, ``500k``, ``750``: the short name of a size."""
    for unit, suffix in ((1_000_000, "M"), (1_000, "k")):
        if events >= unit:
            value = events / unit
            return f"{value:g}{suffix}"
    return str(events)


def parse_sizes(text: str) -> list[int]:
    """A comma-separated list of sizes, smallest first, each once."""
    sizes = sorted({parse_size(part) for part in text.split(",") if part.strip()})
    if not sizes:
        raise SizeError("name at least one size (e.g. --sizes 1M,10M)")
    return sizes


Better = Literal["lower", "higher"]


class Figure(BaseModel):
    name: str
    unit: str
    better: Better = "lower"

    def flat(self, ratio: float) -> bool:
        return ratio <= FLAT if self.better == "lower" else ratio >= 1 / FLAT

    @property
    def target(self) -> str:
        return f"<= {FLAT}x" if self.better == "lower" else f">= {1 / FLAT:.2f}x"


class ScaleRow(BaseModel):
    """One figure at one larger size against the first size."""

    figure: str
    unit: str
    base_size: str
    size: str
    base: float
    value: float
    #: value / base, the median of the per-round ratios.
    ratio: float
    ratios: list[float]
    base_samples: list[float]
    samples: list[float]
    target: str
    met: bool


def ratio_rows(figure: Figure, samples: dict[str, list[float]]) -> list[ScaleRow]:
    """``samples`` (size label -> one value per round, sizes in order, the first the base)
    as a row per larger size. Rounds are paired by position."""
    labels = list(samples)
    base_label, base = labels[0], samples[labels[0]]
    rows = []
    for label in labels[1:]:
        values = samples[label]
        if len(values) != len(base):
            raise ValueError(f"{figure.name}: {label} has {len(values)} rounds, not {len(base)}")
        ratios = [v / b if b else float("inf") for b, v in zip(base, values, strict=True)]
        ratio = statistics.median(ratios)
        rows.append(
            ScaleRow(
                figure=figure.name,
                unit=figure.unit,
                base_size=base_label,
                size=label,
                base=statistics.median(base),
                value=statistics.median(values),
                ratio=ratio,
                ratios=ratios,
                base_samples=base,
                samples=values,
                target=figure.target,
                met=figure.flat(ratio),
            )
        )
    return rows


def _number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:,.2f}"
    return f"{value:.3g}"


def _range(values: list[float]) -> str:
    return f"{_number(min(values))}-{_number(max(values))}" if len(values) > 1 else ""


def markdown(rows: list[ScaleRow]) -> str:
    """The table: each figure at the base size and the larger one (median, range over the
    rounds), their ratio (median of the per-round ratios, range), the target, met."""
    lines = [
        "| figure | size | median (range) | vs | median (range) | ratio (range) | target | met |",
        "|---|---|---:|---|---:|---:|---|---|",
    ]
    for row in rows:
        base = _number(row.base) + (
            f" ({_range(row.base_samples)})" if len(row.samples) > 1 else ""
        )
        value = _number(row.value) + (f" ({_range(row.samples)})" if len(row.samples) > 1 else "")
        spread = f" ({min(row.ratios):.2f}-{max(row.ratios):.2f})" if len(row.ratios) > 1 else ""
        lines.append(
            f"| {row.figure} ({row.unit}) | {row.size} | {value} | {row.base_size} | {base} | "
            f"{row.ratio:.2f}x{spread} | {row.target} | {'yes' if row.met else 'no'} |"
        )
    return "\n".join(lines)
