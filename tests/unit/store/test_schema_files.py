"""migrations/sql holds one file per function and view, named after it, each loaded by
exactly one revision: the newest that makes the object. A revision that made an older
version keeps that text inline, so what it sends never changes (docs/architecture.md,
"The schema"). A kind list's function is the exception: every revision that changes the list
renders its file through ``render_kind_functions`` with the literal list it keeps, so the file
is a fixed one-line template instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.repository import ROOT

SQL = ROOT / "migrations" / "sql"
REVISIONS = sorted((ROOT / "migrations" / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))
FILES = sorted([*SQL.glob("functions/*.sql"), *SQL.glob("views/*.sql")])


def _loaders(relative: str) -> list[Path]:
    return [path for path in REVISIONS if f'sql_file("{relative}"' in path.read_text()]


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_a_file_makes_the_object_it_is_named_after(path: Path) -> None:
    kind = "FUNCTION" if path.parent.name == "functions" else "VIEW"
    made = re.findall(rf"CREATE (?:OR REPLACE )?{kind} (\w+)", path.read_text())
    assert made == [path.stem]


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_one_revision_loads_a_file_and_no_later_one_remakes_it(path: Path) -> None:
    loaders = _loaders(f"{path.parent.name}/{path.name}")
    assert len(loaders) == 1, f"{path.name} is loaded by {[p.name for p in loaders]}"
    later = REVISIONS[REVISIONS.index(loaders[0]) + 1 :]
    remade = re.compile(rf"CREATE (?:OR REPLACE )?(?:FUNCTION|VIEW) {path.stem}\b")
    assert not [p.name for p in later if remade.search(p.read_text())], (
        f"a revision after {loaders[0].name} makes {path.stem} again: it should load the "
        "file, and the older revision keep the text it sent inline"
    )


#: What each kind list's file is: ``render_kind_functions`` renders it in every revision that
#: changes that list, so its text can never change without changing what they sent.
KIND_TEMPLATE = re.compile(
    r"CREATE (?:OR REPLACE )?FUNCTION chronicle_(\w+_kinds)\(\) RETURNS text\[\]\n"
    r"LANGUAGE sql IMMUTABLE PARALLEL SAFE AS \$\$ SELECT ARRAY\[\{\1\}\]::text\[\] \$\$;\n"
)


def test_a_kind_lists_file_is_the_template_every_kind_revision_renders() -> None:
    templates = [path for path in FILES if re.search(r"\{\w+_kinds\}", path.read_text())]
    assert {path.stem for path in templates} == {
        "chronicle_action_kinds",
        "chronicle_event_kinds",
        "chronicle_observation_kinds",
        "chronicle_tool_kinds",
    }
    for path in templates:
        assert KIND_TEMPLATE.fullmatch(path.read_text()), path.name
