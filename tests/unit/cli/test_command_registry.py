"""Each command module adds its parsers and names their handler (``set_defaults``); the
dispatcher only calls it. A command whose module forgot its handler would parse and then fail
with an AttributeError: every command has one, and a coroutine handler is run to its exit code."""

from __future__ import annotations

import argparse
import inspect

from app.cli import COMMAND_MODULES, build_parser, dispatch


def test_every_command_has_a_handler() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert len(commands.choices) >= 25
    for name, command in commands.choices.items():
        handler = command.get_default("handler")
        assert callable(handler), name
        assert list(inspect.signature(handler).parameters) == ["args", "settings"], name
    assert {module.__name__.rsplit(".", 1)[-1] for module in COMMAND_MODULES} >= {"db", "bench"}


def test_a_plain_and_a_coroutine_handler_give_their_exit_code() -> None:
    async def later(args: argparse.Namespace, settings: object) -> int:
        return 3

    def now(args: argparse.Namespace, settings: object) -> int:
        return 4

    assert dispatch(argparse.Namespace(handler=later), None) == 3  # type: ignore[arg-type]
    assert dispatch(argparse.Namespace(handler=now), None) == 4  # type: ignore[arg-type]
