"""A view's rows (``chronicle export --view``: CSV or Parquet) and an archive's
``session_state.parquet``, changed for some sessions only: an erased session's rows dropped,
or the strings of a part a redaction removed taken out of the rows of the sessions it was
removed from (each cell holding one becomes ``[redacted]`` whole, as ``tables`` does).

A row's session is its ``session_id`` column. A file without one (daily usage, say) holds no
session's rows to drop, and each of its rows may hold a removed string, so all are searched.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from app.store.archive.parquet import pyarrow_modules
from app.store.on_disk.tables import BATCH_ROWS, scrubber, searched_type

SESSION_COLUMN = "session_id"


def session_text(cell: Any) -> str | None:
    """A ``session_id`` cell as a UUID's text (lower case), whatever type holds it."""
    if isinstance(cell, UUID):
        return str(cell)
    if isinstance(cell, bytes) and len(cell) == 16:
        return str(UUID(bytes=cell))
    if isinstance(cell, str):
        return cell.strip().lower()
    return None


@dataclass(frozen=True)
class RowChange:
    """Which rows change, and how: dropped, or their cells holding ``texts`` redacted."""

    sessions: frozenset[str]
    drop: bool = False
    texts: tuple[str, ...] = ()

    @classmethod
    def dropping(cls, sessions: Collection[UUID]) -> RowChange:
        return cls(sessions=frozenset(str(s) for s in sessions), drop=True)

    @classmethod
    def scrubbing(cls, sessions: Collection[UUID], texts: Collection[str]) -> RowChange:
        return cls(sessions=frozenset(str(s) for s in sessions), texts=tuple(texts))

    def applies(self, session: Any, has_column: bool) -> bool:
        """Does a row of this session change? (Without the column: only a scrub, of all.)"""
        if not has_column:
            return not self.drop
        return session_text(session) in self.sessions

    def scrub(self) -> Callable[[Any], Any]:
        return scrubber(list(self.texts)) if self.texts else (lambda cell: cell)


# -- CSV -----------------------------------------------------------------------------------


def _csv_rows(path: Path, change: RowChange) -> Iterator[tuple[list[str] | None, list[str]]]:
    """Each row as it is to be written (None: dropped), with where it changed."""
    scrub = change.scrub()
    with path.open(encoding="utf-8", newline="") as file:
        reader = csv.reader(file)
        header = next(reader, None)
        if header is None:
            return
        yield header, []
        column = header.index(SESSION_COLUMN) if SESSION_COLUMN in header else None
        for row in reader:
            cell = row[column] if column is not None and column < len(row) else None
            if not change.applies(cell, column is not None):
                yield row, []
            elif change.drop:
                yield None, [f"line {reader.line_num}"]
            else:
                new = [scrub(value) for value in row]
                names = [
                    f"line {reader.line_num} ({header[i] if i < len(header) else i})"
                    for i, (old, value) in enumerate(zip(row, new, strict=True))
                    if old != value
                ]
                yield new, names


def csv_changes(path: Path, change: RowChange) -> list[str]:
    """Where ``change`` changes a CSV file: ``line N`` dropped, ``line N (column)``."""
    return [where for _, places in _csv_rows(path, change) for where in places]


def rewrite_csv_rows(source: Path, draft: Path, change: RowChange) -> None:
    """``source``'s rows to ``draft`` changed (written as ``chronicle export --view`` writes
    CSV, so the other rows keep their bytes)."""
    with draft.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        for row, _ in _csv_rows(source, change):
            if row is not None:
                writer.writerow(row)


# -- Parquet -------------------------------------------------------------------------------


def _parquet_batches(path: Path, change: RowChange) -> Iterator[tuple[Any, list[str]]]:
    """Each batch of rows as it is to be written, with where it changed."""
    pa, parquet = pyarrow_modules()
    scrub = change.scrub()
    source = parquet.ParquetFile(str(path))
    names = source.schema_arrow.names
    has_column = SESSION_COLUMN in names
    first = 1
    for batch in source.iter_batches(batch_size=BATCH_ROWS):
        sessions = (
            batch.column(names.index(SESSION_COLUMN)).to_pylist()
            if has_column
            else [None] * batch.num_rows
        )
        chosen = [change.applies(session, has_column) for session in sessions]
        where: list[str] = []
        if change.drop:
            where = [f"row {first + i}" for i, hit in enumerate(chosen) if hit]
            if where:
                batch = batch.filter(pa.array([not hit for hit in chosen]))
        elif any(chosen):
            columns = []
            for index, column in enumerate(batch.columns):
                if searched_type(column.type, pa):
                    cells = column.to_pylist()
                    new = [scrub(c) if hit else c for c, hit in zip(cells, chosen, strict=True)]
                    changed = [i for i, (a, b) in enumerate(zip(cells, new, strict=True)) if a != b]
                    where += [f"row {first + i} ({names[index]})" for i in changed]
                    if changed:
                        column = pa.array(new, type=column.type)
                columns.append(column)
            batch = pa.RecordBatch.from_arrays(columns, schema=batch.schema)
        first += len(chosen)
        yield batch, where


def parquet_changes(path: Path, change: RowChange) -> list[str]:
    """Where ``change`` changes a Parquet file: ``row N`` dropped, ``row N (column)``."""
    return sorted(
        (w for _, places in _parquet_batches(path, change) for w in places), key=_row_order
    )


def rewrite_parquet_rows(source: Path, draft: Path, change: RowChange) -> None:
    """``source``'s rows to ``draft`` changed (same schema, its metadata kept)."""
    _, parquet = pyarrow_modules()
    schema = parquet.ParquetFile(str(source)).schema_arrow
    with parquet.ParquetWriter(str(draft), schema) as writer:
        for batch, _ in _parquet_batches(source, change):
            writer.write_batch(batch)


def _row_order(where: str) -> tuple[int, str]:
    number, _, rest = where.removeprefix("row ").partition(" ")
    return int(number), rest
