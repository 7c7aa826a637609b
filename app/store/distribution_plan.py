"""Where every table goes past one write primary (Citus), as data, and the rules that plan
needs of the schema (docs/scale-out.md, "Stage 2").

A distributed table is split into shards by the hash of one column; a reference table is
copied whole to every node. Citus enforces a unique or primary key of a distributed table only
when it includes the distribution column (each shard checks its own rows), and a foreign key
between distributed tables only when both sides are co-located and it joins on their
distribution columns; a distributed table may point at a reference table, never the other way.
``violations`` checks the schema dump (``migrations/sql/schema.sql``) against those rules, so a
new table or key cannot quietly make the plan impossible. Pure: text in, messages out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Distributed:
    """Sharded by ``column``; tables of one ``group`` are co-located (same shard, same node
    for one value), so a join or a function on one session stays on one node."""

    column: str
    group: str


@dataclass(frozen=True)
class Reference:
    """Copied to every node: small, read everywhere, written rarely (each write reaches
    every node in one distributed transaction)."""


Placement = Distributed | Reference

SESSIONS = "session"

#: Every table of the schema and where it goes. A table missing here fails the test.
PLAN: dict[str, Placement] = {
    # The log and what is per session: one co-location group by session id.
    # events is partitioned by month too (migration 0026): Citus distributes a partitioned
    # table partition by partition, each co-located with the group.
    "events": Distributed("session_id", SESSIONS),
    "event_ids": Distributed("session_id", SESSIONS),
    "sessions": Distributed("id", SESSIONS),
    "session_state": Distributed("session_id", SESSIONS),
    "session_leases": Distributed("session_id", SESSIONS),
    "session_owners": Distributed("session_id", SESSIONS),
    # The usage rollups (migration 0028): a session's sums and the days it is counted on
    # with the session; the sums by day and model are few rows (days x models), rewritten by
    # one refresh every few seconds, so copied to every node as the position is.
    "usage_rollup_sessions": Distributed("session_id", SESSIONS),
    "usage_rollup_day_sessions": Distributed("session_id", SESSIONS),
    "usage_rollup_days": Reference(),
    "usage_rollup_latencies": Reference(),
    "usage_rollup_position": Reference(),
    # Content-addressed values: by their hash, each its own group.
    "blobs": Distributed("sha256", "blob"),
    "llm_messages": Distributed("hash", "message"),
    # Gateway counters: by subject (a session's or a user's id), written on every call.
    "gateway_usage": Distributed("subject", "gateway_subject"),
    # Spans wait for their trace before a session exists: by the user who sent them.
    "otel_spans": Distributed("user_id", "otel_user"),
    # People, credentials, limits, and the few rows every node reads.
    "users": Reference(),
    "api_tokens": Reference(),
    "browser_logins": Reference(),
    "login_codes": Reference(),
    "gateway_user_limits": Reference(),
    # The masker's keyed hashes of secrets found after the fact (migration 0030): few rows,
    # read by every process that records.
    "masker_key": Reference(),
    "masked_secrets": Reference(),
    "workers": Reference(),
    "projections": Reference(),
    "checkpoints": Reference(),
    "chronicle_schema_version": Reference(),
}

#: Unique keys of distributed tables that do not include the distribution column today, each
#: with what stage 2 makes of it (docs/scale-out.md, "Keys that change").
KNOWN_EXCEPTIONS: dict[str, str] = {
    "events_pkey": (
        "PRIMARY KEY (global_position, created_at) (a key of the partitioned table must hold "
        "its partition key): becomes PRIMARY KEY (session_id, seq, created_at), each month "
        "keeping its own UNIQUE (session_id, seq); global_position stays an identity column "
        "whose per-node sequences are unique by construction, and an ordinary index serves "
        "the per-node cursor (tx, global_position)"
    ),
    "event_ids_pkey": (
        "PRIMARY KEY (event_id), unique across sessions as the one-table key was: becomes "
        "PRIMARY KEY (session_id, event_id); a retried append names its session, so "
        "idempotency per session is what the writer needs (an index rebuilt, no data moved)"
    ),
}


@dataclass(frozen=True)
class Key:
    """A primary key, unique constraint or unique index of one table."""

    name: str
    table: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class ForeignKey:
    name: str
    table: str
    columns: tuple[str, ...]
    target: str
    target_columns: tuple[str, ...]


@dataclass(frozen=True)
class Schema:
    tables: dict[str, tuple[str, ...]]
    keys: tuple[Key, ...]
    foreign_keys: tuple[ForeignKey, ...]


#: A table, partitioned or not (``)\nPARTITION BY RANGE (created_at);``).
_TABLE = re.compile(
    r"^CREATE TABLE (?:public\.)?(\w+) \((.*?)^\)(?:\nPARTITION BY [^;\n]*)?;", re.M | re.S
)
_CONSTRAINT = re.compile(
    r"^ALTER TABLE ONLY (?:public\.)?(\w+)\s+ADD CONSTRAINT (\w+) "
    r"(PRIMARY KEY|UNIQUE|FOREIGN KEY)(?: NULLS NOT DISTINCT)? \(([^)]*)\)"
    r"(?: REFERENCES (?:public\.)?(\w+)\(([^)]*)\))?",
    re.M,
)
_UNIQUE_INDEX = re.compile(
    r"^CREATE UNIQUE INDEX (\w+) ON (?:ONLY )?(?:public\.)?(\w+) USING \w+ \((.*?)\)(?: WHERE|;)",
    re.M,
)


def _names(text: str) -> tuple[str, ...]:
    """The columns of a key list; an expression counts as no column."""
    return tuple(part.strip().strip('"') for part in text.split(","))


def parse_schema(sql: str) -> Schema:
    """Tables with their columns, unique keys and foreign keys of a ``pg_dump`` schema."""
    tables = {}
    for name, body in _TABLE.findall(sql):
        columns = [line.strip().split(" ", 1)[0] for line in body.splitlines() if line.strip()]
        tables[name] = tuple(c.strip('"') for c in columns if c and c != "CONSTRAINT")
    keys: list[Key] = []
    foreign_keys: list[ForeignKey] = []
    for table, name, kind, columns, target, target_columns in _CONSTRAINT.findall(sql):
        if kind == "FOREIGN KEY":
            foreign_keys.append(
                ForeignKey(name, table, _names(columns), target, _names(target_columns))
            )
        else:
            keys.append(Key(name, table, _names(columns)))
    for name, table, columns in _UNIQUE_INDEX.findall(sql):
        keys.append(Key(name, table, _names(columns)))
    return Schema(tables, tuple(keys), tuple(foreign_keys))


def violations(
    sql: str,
    plan: dict[str, Placement] = PLAN,
    exceptions: dict[str, str] = KNOWN_EXCEPTIONS,
) -> list[str]:
    """What in the schema the plan cannot distribute as it stands, one sentence each."""
    schema = parse_schema(sql)
    found: list[str] = []
    for table in sorted(schema.tables.keys() - plan.keys()):
        found.append(f"table {table} has no place in the distribution plan")
    for table in sorted(plan.keys() - schema.tables.keys()):
        found.append(f"the distribution plan names {table}, which the schema does not have")
    for table, placement in sorted(plan.items()):
        columns = schema.tables.get(table)
        if isinstance(placement, Distributed) and columns and placement.column not in columns:
            found.append(f"table {table} has no column {placement.column} to be distributed by")
    for key in schema.keys:
        owner = plan.get(key.table)
        if not isinstance(owner, Distributed) or key.name in exceptions:
            continue
        if owner.column not in key.columns:
            found.append(
                f"unique key {key.name} ({', '.join(key.columns)}) of {key.table} leaves out "
                f"its distribution column {owner.column}"
            )
    for name in sorted(exceptions.keys() - {key.name for key in schema.keys}):
        found.append(f"the known exception {name} is no longer in the schema: drop it")
    for fk in schema.foreign_keys:
        found.extend(_foreign_key_violations(fk, plan))
    return found


def _foreign_key_violations(fk: ForeignKey, plan: dict[str, Placement]) -> list[str]:
    source, target = plan.get(fk.table), plan.get(fk.target)
    if source is None or target is None or isinstance(target, Reference):
        return []  # unplaced tables are reported already; anything may point at a reference
    if isinstance(source, Reference):
        return [f"foreign key {fk.name}: reference table {fk.table} points at {fk.target}"]
    if source.group != target.group:
        return [f"foreign key {fk.name} joins {fk.table} and {fk.target}, which are not co-located"]
    pairs = set(zip(fk.columns, fk.target_columns, strict=True))
    if (source.column, target.column) not in pairs:
        return [
            f"foreign key {fk.name} of {fk.table} does not join on the distribution columns "
            f"({source.column} -> {fk.target}.{target.column})"
        ]
    return []
