"""SQL over an archive's Parquet in place: DuckDB, each file a view named like the
database's table (``events``, ``sessions``, ``llm_messages``, ``session_state``).

Nothing is loaded or copied: DuckDB reads the Parquet files as the query needs them, in an
in-memory database of its own, with no access to anything but what the views name (external
access is switched off after they are made, so a query cannot read or write other files).
Results come back as ``app.store.analytics`` columns and rows, so ``chronicle sql --archive``
prints them as ``chronicle sql`` does. duckdb is imported on first use (the ``analytics``
extra).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from app.store.analytics.access import Column, QueryResult
from app.store.archive.manifest import PARQUET_TABLES, read_manifest
from app.store.errors import StoreError


class ArchiveQueryError(StoreError):
    """A query over an archive failed, or the archive cannot be queried; one sentence."""


#: DuckDB's type names, as the PostgreSQL names the output formatting knows.
_TYPES = {
    "BOOLEAN": "bool",
    "TINYINT": "int2",
    "SMALLINT": "int2",
    "INTEGER": "int4",
    "BIGINT": "int8",
    "HUGEINT": "numeric",
    "UTINYINT": "int2",
    "USMALLINT": "int4",
    "UINTEGER": "int8",
    "UBIGINT": "numeric",
    "FLOAT": "float4",
    "DOUBLE": "float8",
    "DATE": "date",
    "TIMESTAMP": "timestamp",
    "TIMESTAMP WITH TIME ZONE": "timestamptz",
    "INTERVAL": "interval",
    "BLOB": "bytea",
    "UUID": "uuid",
}


def _type_name(duckdb_type: Any) -> str:
    name = str(duckdb_type).upper()
    if name.startswith("DECIMAL"):
        return "numeric"
    if name.endswith("[]"):
        return "_" + _type_name(name[:-2])
    return _TYPES.get(name, "text")


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise ArchiveQueryError(
            "querying an archive needs duckdb, which is not installed: "
            "pip install 'chronicle[analytics]' (or pip install duckdb)"
        ) from None
    return duckdb


def _quoted(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def query_archive(directory: Path, query: str, *, timeout: float = 30.0) -> QueryResult:
    """Run ``query`` over the archive in ``directory`` (its manifest names the files)."""
    manifest, _ = read_manifest(directory)
    duckdb = _duckdb()
    connection = duckdb.connect(":memory:")
    timer = threading.Timer(timeout, connection.interrupt)
    try:
        paths = []
        for table, name in PARQUET_TABLES.items():
            path = (directory / name).resolve()
            if name in manifest.files and path.is_file():
                paths.append(_quoted(path))
                connection.execute(
                    f"CREATE VIEW {table} AS SELECT * FROM read_parquet({_quoted(path)})"
                )
        # the archive's files, read only, and nothing else on this machine
        connection.execute(f"SET allowed_paths = [{', '.join(paths)}]")
        connection.execute("SET enable_external_access = false")
        connection.execute("SET lock_configuration = true")
        timer.start()
        try:
            cursor = connection.execute(query)
            description = cursor.description or []
            rows = [tuple(row) for row in cursor.fetchall()] if description else []
        except duckdb.InterruptException:
            raise ArchiveQueryError(
                f"the archive query was cancelled after {timeout:g} seconds (--timeout)"
            ) from None
        except duckdb.Error as exc:
            raise ArchiveQueryError(_sentence(exc)) from None
        columns = [Column(item[0], _type_name(item[1])) for item in description]
        return QueryResult(columns, rows)
    finally:
        timer.cancel()
        connection.close()


def _sentence(exc: Exception) -> str:
    text = re.sub(r"\s+", " ", str(exc)).strip()
    return f"the archive query failed: {text}"
