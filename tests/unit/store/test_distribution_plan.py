"""The schema keeps to what distributing it by session (Citus, docs/scale-out.md) needs: every
table has a place in the plan, every unique key of a distributed table includes its
distribution column (or is a known exception the design explains), and every foreign key
between distributed tables joins co-located tables on their distribution columns."""

from __future__ import annotations

import re

import pytest

from app.store.distribution_plan import (
    KNOWN_EXCEPTIONS,
    PLAN,
    Distributed,
    Reference,
    parse_schema,
    violations,
)
from tests.support.repository import ROOT

SCHEMA = (ROOT / "migrations" / "sql" / "schema.sql").read_text()
DOC = (ROOT / "docs" / "scale-out.md").read_text()


def test_the_schema_keeps_to_the_plan() -> None:
    assert violations(SCHEMA) == []


def test_every_key_and_foreign_key_of_the_dump_is_read() -> None:
    """A key the parser missed would pass unchecked: count them in the text too."""
    schema = parse_schema(SCHEMA)
    constraints = re.findall(r"ADD CONSTRAINT \w+ (PRIMARY KEY|UNIQUE|FOREIGN KEY)", SCHEMA)
    unique_indexes = re.findall(r"^CREATE UNIQUE INDEX", SCHEMA, re.M)
    assert len(schema.keys) == len(unique_indexes) + constraints.count("PRIMARY KEY") + (
        constraints.count("UNIQUE")
    )
    assert len(schema.foreign_keys) == constraints.count("FOREIGN KEY")
    assert "events" in schema.tables and "session_id" in schema.tables["events"]


def test_the_design_names_every_table_and_exception() -> None:
    for table, placement in PLAN.items():
        kind = "reference" if isinstance(placement, Reference) else f"`{placement.column}`"
        row = next((line for line in DOC.splitlines() if line.startswith(f"| `{table}` |")), "")
        assert kind in row, f"docs/scale-out.md's table of tables does not place {table}"
    for name in KNOWN_EXCEPTIONS:
        assert f"`{name}`" in DOC, name


def test_the_log_and_what_is_per_session_are_co_located() -> None:
    groups = {
        table: placement.group
        for table, placement in PLAN.items()
        if isinstance(placement, Distributed)
    }
    for table in ("events", "sessions", "session_state", "session_leases", "session_owners"):
        assert groups[table] == groups["events"], table


GOOD = """
CREATE TABLE public.sessions (
    id uuid NOT NULL,
    last_seq integer NOT NULL
);

CREATE TABLE public.users (
    id uuid NOT NULL
);

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);
"""

SMALL_PLAN = {"sessions": Distributed("id", "session"), "users": Reference()}


@pytest.mark.parametrize(
    ("addition", "complaint"),
    [
        (
            "CREATE TABLE public.notes (\n    id uuid NOT NULL\n);\n",
            "table notes has no place in the distribution plan",
        ),
        (
            "ALTER TABLE ONLY public.sessions\n"
            "    ADD CONSTRAINT sessions_seq UNIQUE (last_seq);\n",
            "unique key sessions_seq (last_seq) of sessions leaves out its distribution column id",
        ),
        (
            "CREATE UNIQUE INDEX sessions_by_seq ON public.sessions USING btree (last_seq)"
            " WHERE (last_seq > 0);\n",
            "unique key sessions_by_seq (last_seq) of sessions leaves out",
        ),
        (
            "ALTER TABLE ONLY public.users\n    ADD CONSTRAINT users_session_fkey FOREIGN KEY (id)"
            " REFERENCES public.sessions(id);\n",
            "reference table users points at sessions",
        ),
    ],
    ids=["table without a place", "unique key", "unique index", "reference to distributed"],
)
def test_a_schema_that_breaks_a_rule_is_told(addition: str, complaint: str) -> None:
    assert violations(GOOD, SMALL_PLAN, {}) == []
    found = violations(GOOD + addition, SMALL_PLAN, {})
    assert any(complaint in message for message in found), found


def test_a_foreign_key_between_distributed_tables_must_join_their_distribution_columns() -> None:
    schema = GOOD + (
        "CREATE TABLE public.leases (\n    session_id uuid NOT NULL,\n    owner uuid\n);\n"
        "ALTER TABLE ONLY public.leases\n    ADD CONSTRAINT leases_fkey FOREIGN KEY (owner)"
        " REFERENCES public.sessions(id);\n"
    )
    plan = {**SMALL_PLAN, "leases": Distributed("session_id", "session")}
    assert any(
        "does not join on the distribution columns" in m for m in violations(schema, plan, {})
    )
    elsewhere = {**plan, "leases": Distributed("session_id", "other")}
    assert any("not co-located" in m for m in violations(schema, elsewhere, {}))


def test_an_exception_that_is_gone_is_dropped_from_the_list() -> None:
    found = violations(GOOD, SMALL_PLAN, {"sessions_old_key": "why"})
    assert found == ["the known exception sessions_old_key is no longer in the schema: drop it"]
