"""Every ``session.created`` config key the SQL reads is a key of ``SessionConfig``.

The queries of the store and of each feature's ``sql/`` modules render their key paths from
the model (``json_path``, ``json_has``); the
views and the trigger the migrations created keep their SQL as it was written, so both are
read here for ``payload->'config'`` paths (``->'k'``, ``->>'k'``, ``? 'k'``), and each path's
first key must be one the model stores: a renamed or removed field fails here, not in a
report that silently reads NULL.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

from app.events.session_config import SessionConfig, json_has, json_path
from tests.support.repository import ROOT

APP = ROOT / "app"

#: ``payload->'config'`` then its first key, by ``->`` / ``->>`` or by ``?``.
CONFIG_KEY = re.compile(r"payload->'config'\s*(?:->>?\s*'([^']+)'|\?\s*'([^']+)')")


def stored_keys() -> set[str]:
    keys = set(SessionConfig.stored_keys()) - set(SessionConfig.NESTED)
    for part in SessionConfig.NESTED.values():
        keys.update(part.stored_keys())
    return keys


def keys_read(sql: str) -> set[str]:
    return {flat or has for flat, has in CONFIG_KEY.findall(sql)}


def sql_homes() -> list[str]:
    """Where SQL may live (tests/unit/test_layering.py): ``app.store`` and each ``app.<x>.sql``."""
    return ["app.store"] + [
        f"app.{folder.name}.sql" for folder in sorted(APP.iterdir()) if (folder / "sql").is_dir()
    ]


def store_sql() -> dict[str, str]:
    """Every SQL string a module of a SQL home defines at its top level."""
    found: dict[str, str] = {}
    for home in sql_homes():
        package = importlib.import_module(home)
        for module in pkgutil.walk_packages(package.__path__, f"{home}."):
            loaded = importlib.import_module(module.name)
            for name, value in vars(loaded).items():
                if isinstance(value, str) and "payload->'config'" in value:
                    found[f"{module.name}.{name}"] = value
    return found


MIGRATIONS = sorted((ROOT / "migrations").rglob("*.py")) + sorted(
    (ROOT / "migrations").rglob("*.sql")
)


def test_the_store_reads_the_config_through_the_model() -> None:
    queries = store_sql()
    assert {name.rsplit(".", 1)[0] for name in queries} >= {
        "app.evaluation.sql.evaluation_runs",
        "app.evaluation.sql.evaluation_rows",
        "app.evaluation.sql.stranded_runs",
    }
    for name, sql in queries.items():
        assert keys_read(sql) <= stored_keys(), name


def test_the_migrations_views_read_keys_of_the_model() -> None:
    read = {str(path.relative_to(ROOT)): keys_read(path.read_text()) for path in MIGRATIONS}
    # the report views (0009) read the trial's keys, the audit trigger (0016) the log's mark
    assert set().union(*read.values()) >= {
        "evaluation_task",
        "evaluation_epoch",
        "evaluation_attempt",
        "evaluation_resume",
        "platform_log",
    }
    for path, keys in read.items():
        assert keys <= stored_keys(), path


def test_the_pattern_finds_each_way_a_key_is_read() -> None:
    sql = f"{json_path('evaluation', 'task', 'id')} {json_path('model')} {json_has('limits')}"
    assert keys_read(sql) == {"evaluation_task", "model", "limits"}
    assert not keys_read("c.payload->'config'->>'no_such_key'") <= stored_keys()


@pytest.mark.parametrize("fields", [("evaluation", "tusk"), ("modle",), ("evaluation",)])
def test_a_path_to_no_field_is_refused(fields: tuple[str, ...]) -> None:
    with pytest.raises(KeyError):
        json_path(*fields)
