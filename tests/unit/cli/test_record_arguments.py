"""``chronicle record [options] -- COMMAND ...``: everything after ``--`` (or after the first
word that is not an option) is the agent's command, its own options included."""

from __future__ import annotations

import pytest

from app.cli import _parse, build_parser


@pytest.mark.parametrize(
    "argv",
    [
        ["record", "--session", "nightly", "--", "aider", "--yes", "-m", "fix it"],
        ["record", "--session", "nightly", "aider", "--yes", "-m", "fix it"],
    ],
)
def test_the_agents_options_stay_the_agents(argv: list[str]) -> None:
    args = _parse(build_parser(), argv)
    assert args.command == "record"
    assert args.session == "nightly"
    assert [word for word in args.argv if word != "--"] == ["aider", "--yes", "-m", "fix it"]
