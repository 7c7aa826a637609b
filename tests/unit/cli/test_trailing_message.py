"""A message may follow the options, as docs/replay.md writes it:
``chronicle fork S --at 5 "msg"``."""

from __future__ import annotations

import pytest

from app.cli import _parse, build_parser

SESSION = "00000000-0000-0000-0000-000000000001"


@pytest.mark.parametrize(
    "argv",
    [
        ["fork", SESSION, "--at", "5", "try again"],
        ["fork", SESSION, "try again", "--at", "5"],
        ["resume", SESSION, "--workspace", "ws", "try again"],
        ["resume", SESSION, "try again", "--workspace", "ws"],
    ],
)
def test_the_message_is_taken_before_or_after_the_options(argv: list[str]) -> None:
    args = _parse(build_parser(), argv)
    assert args.message == "try again"
    assert str(args.session) == SESSION


def test_no_message_stays_none() -> None:
    assert _parse(build_parser(), ["fork", SESSION, "--at", "5"]).message is None


@pytest.mark.parametrize(
    "argv",
    [
        ["fork", SESSION, "one", "--at", "5", "two"],
        ["fork", SESSION, "--at", "5", "--no-such-option"],
        ["events", SESSION, "stray"],
    ],
)
def test_anything_else_left_over_is_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        _parse(build_parser(), argv)
    assert exit_.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err
