"""The Parquet tables of an archive, made from its verified JSONL (never read anew from the
database, so the two cannot disagree).

Tables are named and shaped like the database's, so a query moves from ``chronicle sql`` to
``chronicle sql --archive`` (or DuckDB, pandas, polars) with few changes:

- ``events``: one row per event, its columns as the log's (``global_position`` and ``tx``
  are one database's positions and are not archived); ``payload`` is the whole payload
  (blobs resolved) as JSON text, ``hash`` is hex.
- ``sessions``: the head of each session: ``id``, ``created_at`` (its first event's time),
  ``last_seq``, ``last_hash`` (hex).
- ``llm_messages``: ``hash`` (hex) and ``message`` (JSON text) of each prompt message.

pyarrow is imported on first use (the ``analytics`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple
from uuid import UUID

from app.store.analytics.tabular import MissingExtraError
from app.store.archive.checker import read_lines
from app.store.archive.lines import EventLine, MessageLine, SessionLine

#: Rows per Parquet row group written at once.
BATCH_ROWS = 10_000


def pyarrow_modules() -> tuple[Any, Any]:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise MissingExtraError(
            "archives hold Parquet, which needs pyarrow: pip install 'chronicle[analytics]' "
            "(or pip install pyarrow)"
        ) from None
    return pyarrow, pyarrow.parquet


def _schemas(pa: Any) -> dict[str, Any]:
    utc = pa.timestamp("us", tz="UTC")
    return {
        "events": pa.schema(
            [
                ("session_id", pa.string()),
                ("seq", pa.int32()),
                ("event_id", pa.string()),
                ("created_at", utc),
                ("kind", pa.string()),
                ("source", pa.string()),
                ("cause", pa.int32()),
                ("schema_version", pa.int16()),
                ("payload", pa.string()),
                ("hash", pa.string()),
            ]
        ),
        "sessions": pa.schema(
            [
                ("id", pa.string()),
                ("created_at", utc),
                ("last_seq", pa.int32()),
                ("last_hash", pa.string()),
            ]
        ),
        "llm_messages": pa.schema([("hash", pa.string()), ("message", pa.string())]),
    }


def _json(value: Any) -> str:
    """JSON text of a payload as readers want it (lone surrogates kept as escapes)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class _Table:
    """Rows gathered into batches and written as row groups of one Parquet file."""

    def __init__(self, pa: Any, parquet: Any, path: Path, schema: Any) -> None:
        self.pa, self.schema = pa, schema
        self.writer = parquet.ParquetWriter(str(path), schema)
        self.columns: dict[str, list[Any]] = {name: [] for name in schema.names}
        self.rows = 0

    def add(self, **values: Any) -> None:
        for name, column in self.columns.items():
            column.append(values[name])
        if len(self.columns[self.schema.names[0]]) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        count = len(next(iter(self.columns.values())))
        if count:
            self.writer.write_table(self.pa.Table.from_pydict(self.columns, schema=self.schema))
            self.rows += count
            self.columns = {name: [] for name in self.columns}

    def close(self) -> int:
        self.flush()
        self.writer.close()
        return self.rows


def _safe(text: str) -> str:
    """Text Parquet (UTF-8) can hold: a lone surrogate becomes its JSON escape."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(text, ensure_ascii=True)[1:-1]
    return text


def _payload_text(payload: Any) -> str:
    text = _json(payload)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(payload, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return text


def _lines(jsonl: Path) -> Iterator[Any]:
    with jsonl.open(encoding="utf-8", newline="\n") as file:
        for _, line in read_lines(file):
            yield line


class WrittenTables(NamedTuple):
    #: Rows written, per table.
    rows: dict[str, int]
    #: Per session: the times of its first and last events.
    times: dict[UUID, tuple[datetime, datetime]]


def write_parquet_tables(jsonl: Path, directory: Path, files: dict[str, str]) -> WrittenTables:
    """``events``, ``sessions`` and ``llm_messages`` from the (verified) export file
    ``jsonl``, into ``directory`` under the names ``files`` gives."""
    pa, parquet = pyarrow_modules()
    times: dict[UUID, tuple[datetime, datetime]] = {}
    schemas = _schemas(pa)
    tables = {name: _Table(pa, parquet, directory / files[name], schemas[name]) for name in schemas}
    try:
        opened: SessionLine | None = None
        for line in _lines(jsonl):
            if isinstance(line, SessionLine):
                opened = line
            elif isinstance(line, MessageLine):
                tables["llm_messages"].add(hash=line.hash, message=_payload_text(line.message))
            elif isinstance(line, EventLine):
                created = line.created()
                first = times.get(line.session_id, (created, created))[0]
                times[line.session_id] = (first, created)
                if opened is not None:  # its first event: the session's row, as created
                    tables["sessions"].add(
                        id=str(opened.session_id), created_at=created,
                        last_seq=opened.events, last_hash=opened.head,
                    )  # fmt: skip
                    opened = None
                tables["events"].add(
                    session_id=str(line.session_id),
                    seq=line.seq,
                    event_id=str(line.event_id),
                    created_at=created,
                    kind=_safe(line.kind),
                    source=_safe(line.source),
                    cause=line.cause,
                    schema_version=line.schema_version,
                    payload=_payload_text(line.payload),
                    hash=line.hash,
                )
    finally:
        written = {name: table.close() for name, table in tables.items()}
    return WrittenTables(written, times)


def parquet_heads(path: Path) -> dict[str, tuple[int, str]]:
    """Per session of an archive's ``events`` Parquet file: (events, hash of its last seq)."""
    _, parquet = pyarrow_modules()
    table = parquet.read_table(str(path), columns=["session_id", "seq", "hash"])
    heads: dict[str, tuple[int, str]] = {}
    best: dict[str, int] = {}
    for session, seq, digest in zip(
        table.column("session_id").to_pylist(),
        table.column("seq").to_pylist(),
        table.column("hash").to_pylist(),
        strict=True,
    ):
        count, _ = heads.get(session, (0, ""))
        if seq >= best.get(session, 0):
            best[session] = seq
            heads[session] = (count + 1, digest)
        else:
            heads[session] = (count + 1, heads[session][1])
    return heads


def parquet_rows(path: Path) -> int:
    """Rows of a Parquet file, from its footer."""
    _, parquet = pyarrow_modules()
    return int(parquet.ParquetFile(str(path)).metadata.num_rows)
