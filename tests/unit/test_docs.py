"""The README stays a front door and the documentation's links lead somewhere.

README.md is at most 250 lines (the rest lives in docs/, one subject a page), and every
relative link in README.md and docs/*.md names a file that exists and, when it has a
``#fragment``, a heading of that file as GitHub anchors it (lower case, punctuation dropped,
spaces made hyphens, ``-1``, ``-2`` ... for repeats). Links inside code are not links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.repository import ROOT

README_MAX_LINES = 250

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def unfenced(text: str) -> str:
    """The text outside fenced blocks (fenced lines become empty lines)."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return "\n".join(lines)


def prose(text: str) -> str:
    """The text outside fenced blocks and inline code."""
    return INLINE_CODE.sub("", unfenced(text))


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text: the rendered text, lower case, without punctuation."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # emphasis, not snake_case
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in unfenced(path.read_text(encoding="utf-8")).split("\n"):  # code in headings
        match = HEADING.match(line)
        if not match:
            continue
        base = anchor(match["text"])
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(path: Path) -> list[str]:
    """Each relative link of ``path`` whose file or heading does not exist, as ``path: target``."""
    problems = []
    for match in LINK.finditer(prose(path.read_text(encoding="utf-8"))):
        target = match["target"]
        if SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, fragment = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            problems.append(f"{path.name}: {target} (no such file)")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            problems.append(f"{path.name}: {target} (no such heading)")
    return problems


def documents(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move the detail to docs/"
    )


def test_every_relative_link_leads_to_a_file_and_heading() -> None:
    problems = [problem for path in documents(ROOT) for problem in broken_links(path)]
    assert problems == []


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("The `chronicle` command", "the-chronicle-command"),
        ("`llm_calls` — one row per model call", "llm_calls--one-row-per-model-call"),
        ("Event kinds (`app/events`)", "event-kinds-appevents"),
        ("Importing other agents' recordings", "importing-other-agents-recordings"),
        ("Sandboxes: the execution service", "sandboxes-the-execution-service"),
    ],
)
def test_anchors_are_githubs(heading: str, expected: str) -> None:
    assert anchor(heading) == expected


def test_a_broken_link_is_named(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(
        "# A page\n\n## Usage notes\n\n## Usage notes\n\n## The `chronicle` command\n",
        encoding="utf-8",
    )
    (tmp_path / "README.md").write_text(
        "# Readme\n\n"
        "[ok](docs/page.md) [ok](docs/page.md#usage-notes) [ok](docs/page.md#usage-notes-1)\n"
        "[ok](#readme) [web](https://example.org/x#y) `[code](missing.md)`\n"
        "[ok](docs/page.md#the-chronicle-command)\n"
        "```\n[fenced](missing.md)\n```\n"
        "[gone](docs/gone.md) [bad anchor](docs/page.md#usage) [self](#nowhere)\n",
        encoding="utf-8",
    )
    assert [problem for path in documents(tmp_path) for problem in broken_links(path)] == [
        "README.md: docs/gone.md (no such file)",
        "README.md: docs/page.md#usage (no such heading)",
        "README.md: #nowhere (no such heading)",
    ]
