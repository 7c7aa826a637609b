"""`chronicle tokens create --expires SPAN`: spans read as written, nonsense refused."""

from __future__ import annotations

import argparse
from datetime import timedelta

import pytest

from app.cli.users import lifetime


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("90m", timedelta(minutes=90)),
        ("2w", timedelta(weeks=2)),
        ("1y", timedelta(days=365)),
        (" 7d ", timedelta(days=7)),
    ],
)
def test_a_span_is_read(text: str, span: timedelta) -> None:
    assert lifetime(text) == span


@pytest.mark.parametrize("text", ["0d", "30", "d", "1.5d", "-1d", "30s", "thirty days"])
def test_anything_else_is_refused_with_examples(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"e\.g\. 90m, 12h, 30d"):
        lifetime(text)
