"""migrations/sql holds one file per function and view, named after it, each loaded by
exactly one revision: the newest that makes the object. A revision that made an older
version keeps that text inline, so what it sends never changes (docs/architecture.md,
"The schema")."""

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
