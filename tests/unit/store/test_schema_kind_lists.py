"""The kind lists in the schema (migrations/sql/schema.sql: the kind functions and the partial
indexes over kinds) are the event registry's, rendered as app.events.kind_lists renders them;
a kind added to the code without a revision that renders them again fails here."""

from __future__ import annotations

import re

from app.events.kind_lists import KIND_LISTS, sql_kinds
from app.store.schema_dump import schema_file
from tests.support.repository import ROOT

SCHEMA = schema_file().read_text(encoding="utf-8")


def _function_list(name: str) -> str:
    found = re.search(rf"FUNCTION public\.{name}\(\).*?ARRAY\[(.*?)\]::text\[\]", SCHEMA, re.S)
    assert found, name
    return found.group(1)


def _index_kinds(index: str) -> set[str]:
    found = re.search(rf"INDEX {index} ON .*kind = ANY \(ARRAY\[(.*?)\]\)", SCHEMA)
    assert found, index
    return set(re.findall(r"'([^']+)'::text", found.group(1)))


def test_every_kind_function_lists_the_registrys_kinds() -> None:
    for placeholder, kinds in KIND_LISTS.items():
        assert _function_list(f"chronicle_{placeholder}") == sql_kinds(kinds), placeholder


def test_the_indexes_over_kinds_list_the_registrys() -> None:
    assert _index_kinds("events_one_observation_per_action") == KIND_LISTS["observation_kinds"]
    assert _index_kinds("events_tool_calls_by_time") == KIND_LISTS["tool_kinds"]


def test_every_kind_placeholder_of_the_sql_files_is_a_registry_list() -> None:
    files = sorted((ROOT / "migrations" / "sql").glob("*/*.sql"))
    named = {name for path in files for name in re.findall(r"\{(\w+_kinds)\}", path.read_text())}
    assert named == set(KIND_LISTS)
