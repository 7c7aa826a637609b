"""The shell examples of README.md and docs/: found, their placeholders filled in, run, and
their shown output compared with what they print.

A shell example is a fenced block tagged ``sh``, ``bash`` or ``console``. In a ``console``
block the lines after ``$ `` are commands and the others their output (``[exit N]``: the
command's exit status, else 0); in ``sh``/``bash`` every line is a command (``#`` comments
dropped). A line ending in ``\\`` continues on the next. The line before a block may say

- ``<!-- not-run: REASON -->``: the block is not run (a real provider's key, minutes of
  work, a program not installed here...); the reason is required;
- ``<!-- example-transcript -->``: run by tests/system/evaluation/test_readme_example.py.

A session id shown in a command's output stands for the id the command really printed, in
the commands after it; any other id in a command for the test's recorded session.

Placeholders (see docs/contributing.md#shell-examples-in-the-docs): ``$TOKEN`` and the
README's example token, ``$SESSION``/``SESSION``/a session id, the server's
address ``http://127.0.0.1:8000`` or ``http://localhost:8000``, ``./dev chronicle``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.repository import ROOT

SHELL = frozenset({"sh", "bash", "console"})
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
MARKER = re.compile(r"^<!--\s*(?P<name>not-run|example-transcript)(?::(?P<reason>.*?))?\s*-->$")
EXIT = re.compile(r"^\[exit (\d+)\]$")

#: The README's example token, shown as ``./dev up`` prints one.
EXAMPLE_TOKEN = "chr_pu-JvvO0besLlqCYSIPgqoy8jW2IGzAKJM3skZ-ftEs"
#: A session id in an example: whole, or its first part and an ellipsis (``…`` or ``...``).
SESSION_ID = re.compile(
    r"\b[0-9a-f]{8}-(?:[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|…|\.\.\.)"
)
#: A time of day as the event lists print it, or a duration (``0.20 s``, ``12 ms``): in shown
#: output, any stands for any other.
TIME_OF_DAY = re.compile(r"\b\d\d:\d\d:\d\d(?:\.\d+)?\b|\b\d+(?:\.\d+)? m?s\b")
EXAMPLE_URL = re.compile(r"http://(?:127\.0\.0\.1|localhost):8000")


@dataclass
class Command:
    text: str
    status: int = 0
    shown: list[str] = field(default_factory=list)


@dataclass
class Block:
    page: str
    line: int
    lang: str
    body: str
    marker: str | None = None  # "not-run" or "example-transcript"
    reason: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runs_here(self) -> bool:
        return self.marker is None

    def command_line(self, line: str) -> str:
        """A line of a command: in ``sh``/``bash``, without its ``# comment``."""
        return (line if self.lang == "console" else strip_comment(line)).rstrip()

    def commands(self) -> list[Command]:
        """The block's commands in order, with the output a console block shows for each."""
        found: list[Command] = []
        lines = iter(self.body.splitlines())
        for line in lines:
            if self.lang == "console" and not line.startswith("$ "):
                status = EXIT.match(line.strip())
                if status is not None:
                    found[-1].status = int(status[1])
                elif line.strip() and found:
                    found[-1].shown.append(line)
                continue
            text = self.command_line(line[2:] if self.lang == "console" else line)
            while text.endswith("\\") or open_quote(text):
                if text.endswith("\\"):
                    text = text[:-1].rstrip() + " " + self.command_line(next(lines)).strip()
                else:  # a quoted argument over several lines (a JSON body)
                    text += "\n" + next(lines)
            if text.strip():
                found.append(Command(text.strip()))
        return found


def open_quote(text: str) -> bool:
    """Whether a quote of ``text`` is still open (the command goes on on the next line)."""
    try:
        shlex.split(text, comments=False)
    except ValueError:
        return True
    return False


def strip_comment(line: str) -> str:
    """The line without a trailing ``# comment`` (a ``#`` outside quotes after a space)."""
    quote: str | None = None
    for at, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (at == 0 or line[at - 1].isspace()):
            return line[:at].rstrip()
    return line


def blocks(path: Path) -> list[Block]:
    """The shell blocks of one page, with the marker on the line before each."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    at = 0
    while at < len(lines):
        fence = FENCE.match(lines[at])
        if fence is None:
            at += 1
            continue
        end = next(i for i in range(at + 1, len(lines)) if lines[i].startswith("```"))
        if fence["lang"] in SHELL:
            before = lines[at - 1].strip() if at else ""
            marker = MARKER.match(before)
            found.append(
                Block(
                    page=path.relative_to(path.parents[1] if path.parent.name == "docs" else
                                          path.parent).as_posix(),
                    line=at + 1,
                    lang=fence["lang"],
                    body="\n".join(lines[at + 1 : end]),
                    marker=marker["name"] if marker else None,
                    reason=(marker["reason"] or "").strip() if marker else None,
                )
            )  # fmt: skip
        at = end + 1
    return found


def documented_pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


@dataclass
class Placeholders:
    """What an example's placeholders stand for on the test's server."""

    url: str
    token: str
    session: str
    #: A session id an example's output showed -> the id really printed there.
    printed: dict[str, str] = field(default_factory=dict)

    def fill(self, command: str) -> str:
        command = command.replace("./dev chronicle ", "chronicle ")
        command = command.replace(EXAMPLE_TOKEN, self.token)
        command = EXAMPLE_URL.sub(self.url, command)
        command = SESSION_ID.sub(lambda id_: self.printed.get(id_[0], self.session), command)
        return re.sub(r"(?<![\w$/-])SESSION\b", self.session, command)

    def environment(self) -> dict[str, str]:
        return {"TOKEN": self.token, "SESSION": self.session}


def shown_pattern(shown: str) -> tuple[re.Pattern[str], list[str]]:
    """An output line as shown, and the session ids it shows: ``…`` (or ``...``) stands for
    anything, a session id (``764913d8-…`` or whole) for any id (a group of the pattern, in
    the order of the ids returned), a time of day (``09:47:27.099``) for any."""
    ids = [match[0] for match in SESSION_ID.finditer(shown)]
    pattern = []
    for at, piece in enumerate(SESSION_ID.split(TIME_OF_DAY.sub("…", shown.strip()))):
        if at:
            pattern.append(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
        pattern.append(".*?".join(re.escape(part) for part in re.split(r"…|\.\.\.", piece)))
    return re.compile("".join(pattern)), ids


def match_output(shown: list[str], output: str) -> tuple[str | None, dict[str, str]]:
    """The first shown line not found in ``output`` (in order), or None; and what each
    session id shown was in the real output (so that a later command's id is the real one)."""
    lines = [line.strip() for line in output.splitlines()]
    bound: dict[str, str] = {}
    at = 0
    for expected in shown:
        wanted, ids = shown_pattern(expected)
        found = None
        while at < len(lines) and (found := wanted.fullmatch(lines[at])) is None:
            at += 1
        if found is None:
            return expected, bound
        bound |= dict(zip(ids, found.groups(), strict=True))
        at += 1
    return None, bound


def missing_output(shown: list[str], output: str) -> str | None:
    return match_output(shown, output)[0]
