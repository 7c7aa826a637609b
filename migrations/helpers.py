"""What every revision needs: send SQL as written, name the schema, load a named SQL file.

The revisions in ``versions/`` import this module (``app.migrations.helpers``) instead of
each carrying its own copy. A revision's output must never change once it has run somewhere,
so nothing here may change what an existing call sends: ``sql_file`` returns a file's text
with only the placeholders it is given replaced, and the rule of ``migrations/sql/`` (only the
newest revision that touches an object loads its file) keeps older revisions on the text they
always sent (docs/architecture.md, "The schema").
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from alembic import op

MIGRATIONS = Path(__file__).resolve().parent
#: One file per function (``functions/``) and per view (``views/``), each its current text.
SQL = MIGRATIONS / "sql"


def run(sql: str) -> None:
    """Send ``sql`` to the driver without parameters, so it arrives exactly as written
    (``op.execute`` would read ``:MI`` in a timestamp format as a bind parameter)."""
    with op.get_bind().connection.dbapi_connection.cursor() as cursor:
        cursor.execute(sql)


def search_path() -> str:
    """The schema the tables live in, behind pg_catalog; pg_temp last so it shadows nothing
    (what every ``SECURITY DEFINER`` function is pinned to)."""
    with op.get_bind().connection.dbapi_connection.cursor() as cursor:
        cursor.execute("SELECT quote_ident(current_schema())")
        row = cursor.fetchone()
    assert row is not None
    return f"pg_catalog, {row[0]}, pg_temp"


def quoted(kinds: tuple[str, ...] | frozenset[str]) -> str:
    """Kinds as a list of SQL string literals, in a stable order for tuples as given."""
    return ", ".join(f"'{kind}'" for kind in kinds)


def sql_file(name: str, **placeholders: str) -> str:
    """The text of ``migrations/sql/<name>`` with each ``{placeholder}`` given replaced
    (``{search_path}``, a kind list); a placeholder left in the text is an error."""
    text = (SQL / name).read_text(encoding="utf-8")
    for key, value in placeholders.items():
        marker = "{" + key + "}"
        if marker not in text:
            raise ValueError(f"{name} has no placeholder {marker}")
        text = text.replace(marker, value)
    return text


def earlier_revision(file_name: str) -> ModuleType:
    """An earlier revision's module (``versions/<file_name>``), for a revision that restores
    or derives from the text it sent."""
    path = MIGRATIONS / "versions" / file_name
    spec = importlib.util.spec_from_file_location(f"chronicle_revision_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kinds_kept_by(file_name: str, name: str) -> tuple[str, ...]:
    """The kind list an earlier revision rendered and keeps as a literal tuple (``name``: its
    constant, ``EVENT_KINDS``, ``ACTION_KINDS``...): a new kind's revision is that list plus
    the kind, and its downgrade renders that list again."""
    return tuple(getattr(earlier_revision(file_name), name))


def render_kind_functions(**lists: Iterable[str]) -> str:
    """``CREATE OR REPLACE`` of ``chronicle_<name>()`` for each kind list given
    (``event_kinds=...``, ``action_kinds=...``), its kinds sorted as
    ``app.events.kind_lists.sql_kinds`` writes them (what the schema test compares). Replaced
    in place, each function keeps its owner and grants. A partial index over kinds
    (``events_one_observation_per_action``, ``events_tool_calls_by_time``) is not rebuilt
    here: a revision that changes the observation or tool kinds builds it again (0010)."""
    statements = []
    for name, kinds in lists.items():
        text = sql_file(f"functions/chronicle_{name}.sql", **{name: quoted(tuple(sorted(kinds)))})
        statements.append(text.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
    return "\n".join(statements)
