"""The reference pages name everything the code has, so that a new command, setting or event
kind cannot ship undocumented.

- docs/cli.md: every command and subcommand of the argparse tree (``build_parser``) appears
  in the first column of its table, as ``chronicle COMMAND SUB`` or with the subcommand among
  alternatives (``users disable|enable NAME``, ``tokens list`` after ``chronicle tokens ...``
  in the same cell);
- docs/configuration.md: every setting (``Settings``' flat names, ``CHRONICLE_`` + the name
  in the environment), in backticks;
- docs/event-store.md: every registered event kind (``EVENT_TYPES``), in the kind column of
  its event-kinds table.
"""

from __future__ import annotations

import argparse
import re

from app.cli import build_parser
from app.config import flat_names
from app.events.registry import EVENT_TYPES
from tests.support.repository import ROOT

CODE = re.compile(r"`([^`\n]+)`")
FENCED = re.compile(r"^```.*?^```", re.S | re.M)


def page(name: str) -> str:
    """A page of docs/ without its fenced blocks (whose backticks would pair with the text's)."""
    return FENCED.sub("", (ROOT / "docs" / name).read_text(encoding="utf-8"))


def command_paths(parser: argparse.ArgumentParser) -> set[tuple[str, ...]]:
    """Each command as the words that name it: ``("db", "up")``, ``("run",)``."""
    paths: set[tuple[str, ...]] = set()

    def walk(node: argparse.ArgumentParser, prefix: tuple[str, ...]) -> None:
        subparsers = [
            action for action in node._actions if isinstance(action, argparse._SubParsersAction)
        ]
        if not subparsers and prefix:
            paths.add(prefix)
        for action in subparsers:
            for name, child in action.choices.items():
                walk(child, (*prefix, name))

    walk(parser, ())
    return paths


def table_rows(text: str) -> list[list[str]]:
    """The cells of each Markdown table row (the separator rows left out)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not re.fullmatch(r"[|\s:-]+", line):
            rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip("|"))])
    return rows


def documented_commands(text: str) -> set[tuple[str, ...]]:
    """The command paths the first column of the page's tables names. A code span starting
    with ``chronicle`` names its command; one that does not continues the cell's last command
    (``users list`` after ``chronicle users add NAME``). A second word's ``a|b`` alternatives
    each count."""
    found: set[tuple[str, ...]] = set()
    for row in table_rows(text):
        top: str | None = None
        for span in CODE.findall(row[0]):
            words = span.replace("\\|", "|").split()
            if words and words[0] == "chronicle":
                words = words[1:]
                top = words[0] if words else None
            elif top is not None and words and words[0] == top:
                pass
            else:
                continue
            if not words:
                continue
            found.add((words[0],))
            if len(words) > 1:
                for alternative in words[1].split("|"):
                    found.add((words[0], alternative))
    return found


def test_every_command_is_in_the_cli_reference() -> None:
    documented = documented_commands(page("cli.md"))
    missing = sorted(" ".join(path) for path in command_paths(build_parser()) - documented)
    assert missing == [], f"docs/cli.md lacks a row for: {missing}"


def test_every_benchmark_is_in_the_cli_reference() -> None:
    """``chronicle bench NAME``'s names are choices, not subcommands: its row lists each."""
    bench = next(
        action.choices["bench"]
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    names = next(action.choices for action in bench._actions if action.dest == "name")
    documented = documented_commands(page("cli.md"))
    missing = sorted(name for name in names if ("bench", name) not in documented)
    assert missing == [], f"docs/cli.md's chronicle bench row lacks {missing}"


def test_every_setting_is_in_the_configuration_reference() -> None:
    text = page("configuration.md")
    named = {word for span in CODE.findall(text) for word in re.findall(r"\w+", span)}
    missing = sorted(set(flat_names().every) - named)
    assert missing == [], f"docs/configuration.md lacks the settings {missing}"


def test_every_event_kind_is_in_the_event_kinds_table() -> None:
    text = page("event-store.md")
    section = text.split("## Event kinds", 1)[1]
    kinds = {span for row in table_rows(section) if len(row) > 1 for span in CODE.findall(row[1])}
    missing = sorted(set(EVENT_TYPES) - kinds)
    assert missing == [], f"docs/event-store.md's event kinds lack {missing}"


def test_a_missing_subcommand_is_found() -> None:
    page = (
        "| command | what |\n|---|---|\n"
        "| `chronicle db up`, `db stop` | x |\n"
        "| `chronicle users add NAME`, `users disable\\|enable NAME` | x |\n"
        "| `chronicle run ...` | x |\n"
        "| `chronicle sql`, `other thing` | x |\n"
    )
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers()
    for name, subs in {"db": ["up", "stop", "url"], "users": ["add", "enable"], "run": []}.items():
        child = commands.add_parser(name)
        if subs:
            children = child.add_subparsers()
            for sub in subs:
                children.add_parser(sub)
    assert command_paths(parser) - documented_commands(page) == {("db", "url")}
