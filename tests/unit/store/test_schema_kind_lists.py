"""The kind lists in the schema (migrations/sql/schema.sql: the kind functions and the partial
indexes over kinds) are the event registry's, rendered as app.events.kind_lists renders them;
a kind added to the code without a revision that renders them again fails here."""

from __future__ import annotations

import re
import textwrap

from app.events.kind_lists import KIND_LISTS, sql_kinds
from app.migrations.helpers import render_kind_functions
from app.store.schema_dump import schema_file
from tests.support.repository import ROOT

SCHEMA = schema_file().read_text(encoding="utf-8")
VERSIONS = ROOT / "migrations" / "versions"


def _function_list(name: str) -> str:
    found = re.search(rf"FUNCTION public\.{name}\(\).*?ARRAY\[(.*?)\]::text\[\]", SCHEMA, re.S)
    assert found, name
    return found.group(1)


def _index_kinds(index: str) -> set[str]:
    found = re.search(rf"INDEX {index} ON .*kind = ANY \(ARRAY\[(.*?)\]\)", SCHEMA)
    assert found, index
    return set(re.findall(r"'([^']+)'::text", found.group(1)))


def newest_revision_keeping(placeholder: str) -> str:
    """The newest revision that keeps this kind list as a literal tuple (its upper-case name)."""
    constant = re.compile(rf"^{placeholder.upper()} = ", re.M)
    keeping = [
        path.name for path in sorted(VERSIONS.glob("*.py")) if constant.search(path.read_text())
    ]
    assert keeping, placeholder
    return keeping[-1]


def what_to_do(placeholder: str, listed: set[str], kinds: frozenset[str]) -> str:
    """What a developer who added (or removed) a kind does next, as code to paste."""
    constant = placeholder.upper()
    kept = f"kinds_kept_by({newest_revision_keeping(placeholder)!r}, {constant!r})"
    added, removed = sorted(kinds - listed), sorted(listed - kinds)
    difference = "; ".join(
        f"{what} {names}" for what, names in (("lacks", added), ("lists", removed)) if names
    )
    now = f"({', '.join([f'*{kept}', *map(repr, added)])},)"
    if removed:
        now = f"tuple(kind for kind in {now} if kind not in {removed!r})"
    return (
        f"chronicle_{placeholder}() in migrations/sql/schema.sql differs from app/events' "
        f"({difference}). Add a revision migrations/versions/<next>_<what>.py "
        "(docstring, revision and down_revision as any other's), then:\n\n"
        "    from app.migrations.helpers import kinds_kept_by, render_kind_functions, run\n\n"
        f"    {constant} = {now}\n\n"
        "    def upgrade() -> None:\n"
        f"        run(render_kind_functions({placeholder}={constant}))\n\n"
        "    def downgrade() -> None:\n"
        f"        run(render_kind_functions({placeholder}={kept}))\n\n"
        "then run ./dev schema (it rewrites migrations/sql/schema.sql) and this test again"
        + (
            "; an action or observation kind also builds the partial indexes over kinds again "
            "(as migrations/versions/0010_imported_kinds.py does; an observation kind: each "
            "month's, dropped and made by chronicle_event_partition_keys)"
            if placeholder != "event_kinds"
            else ""
        )
    )


def test_every_kind_function_lists_the_registrys_kinds() -> None:
    for placeholder, kinds in KIND_LISTS.items():
        listed = _function_list(f"chronicle_{placeholder}")
        assert listed == sql_kinds(kinds), what_to_do(
            placeholder, set(re.findall(r"'([^']+)'", listed)), kinds
        )


def test_the_indexes_over_kinds_list_the_registrys() -> None:
    assert _index_kinds("events_tool_calls_by_time") == KIND_LISTS["tool_kinds"]
    # One observation per action across months: the constraint trigger, and each month's own
    # unique index (chronicle_event_partition_keys), read the kinds from the function, whose
    # list the test above holds (a month's index is held to it by test_validation.py).
    assert re.search(
        r"CREATE CONSTRAINT TRIGGER events_one_observation_per_action AFTER INSERT ON "
        r"public\.events .*WHEN \(\(\(new\.cause IS NOT NULL\) AND \(new\.kind = ANY "
        r"\(public\.chronicle_observation_kinds\(\)\)\)\)\)",
        SCHEMA,
    )


def test_every_kind_placeholder_of_the_sql_files_is_a_registry_list() -> None:
    files = sorted((ROOT / "migrations" / "sql").glob("*/*.sql"))
    named = {name for path in files for name in re.findall(r"\{(\w+_kinds)\}", path.read_text())}
    assert named == set(KIND_LISTS)


def test_a_new_kinds_failure_says_the_revision_to_write_and_it_renders_the_registry() -> None:
    """The code the failure above asks for, run as written, renders the kinds with the new
    one: what a developer pastes is a working revision, not a hint."""
    kinds = KIND_LISTS["event_kinds"] | {"toy.kind"}
    advice = what_to_do("event_kinds", set(KIND_LISTS["event_kinds"]), kinds)
    assert "(lacks ['toy.kind'])" in advice and "./dev schema" in advice
    code = advice.split("\n\n", 1)[1].rsplit("\n\nthen", 1)[0]
    revision: dict[str, object] = {}
    exec(textwrap.dedent(code), revision)  # the advice's own code, as pasted
    now = revision["EVENT_KINDS"]
    assert isinstance(now, tuple) and sorted(now) == sorted(kinds)
    rendered = render_kind_functions(event_kinds=now)
    assert f"ARRAY[{sql_kinds(kinds)}]::text[]" in rendered
    assert rendered.startswith("CREATE OR REPLACE FUNCTION chronicle_event_kinds()")


def test_a_kind_taken_out_and_one_renamed_get_a_revision_too() -> None:
    for removed, added in ((["think"], []), (["think"], ["thought"])):
        kinds = (KIND_LISTS["action_kinds"] - set(removed)) | set(added)
        advice = what_to_do("action_kinds", set(KIND_LISTS["action_kinds"]), kinds)
        assert "partial indexes" in advice
        code = advice.split("\n\n", 1)[1].rsplit("\n\nthen", 1)[0]
        revision: dict[str, object] = {}
        exec(textwrap.dedent(code), revision)
        now = revision["ACTION_KINDS"]
        assert isinstance(now, tuple) and sorted(now) == sorted(kinds)
