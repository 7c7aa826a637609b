"""A value found and removed in the files that hold no chain: a view's rows (CSV, Parquet),
an ATIF trajectory (a JSON document), an archive's ``session_state.parquet``.

Nothing proves these files, so there is no marker to keep: a cell (or a JSON string) that
holds the value becomes ``[redacted]`` whole, as the log's readers see a redacted string.
The text around the value goes with it, as in the log. A Parquet file is read decoded
(pyarrow), never searched as bytes: its pages may be compressed, and its statistics are
written anew with the rows.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.store.archive.parquet import pyarrow_modules
from app.store.on_disk.forms import (
    REDACTED_TEXT,
    Values,
    as_values,
    byte_pattern,
    in_bytes,
    string_holds,
)

#: Rows read from a Parquet file at once.
BATCH_ROWS = 4096


def lines_holding(path: Path, value: Values) -> list[int]:
    """The numbers (1-based) of the lines of a file whose bytes hold ``value``."""
    pattern = byte_pattern(value)
    with path.open("rb") as file:
        return [number for number, raw in enumerate(file, start=1) if pattern.search(raw)]


def scrubber(value: Values) -> Callable[[Any], Any]:
    """A function giving a decoded value with each string (or bytes) holding ``value`` (or
    any of several) replaced by ``[redacted]``; lists and mappings walked."""
    holds = string_holds(value)
    raw_forms = [form for each in as_values(value) for form in in_bytes(each)]

    def scrub(item: Any) -> Any:
        if isinstance(item, str):
            return REDACTED_TEXT if holds(item) else item
        if isinstance(item, bytes):
            return REDACTED_TEXT.encode() if any(f in item for f in raw_forms) else item
        if isinstance(item, list):
            return [scrub(each) for each in item]
        if isinstance(item, tuple):
            return tuple(scrub(each) for each in item)
        if isinstance(item, dict):
            return {key: scrub(each) for key, each in item.items()}
        return item

    return scrub


# -- CSV -----------------------------------------------------------------------------------


def redact_csv(source: Path, draft: Path, value: Values) -> None:
    """``source``'s rows to ``draft``, each cell holding ``value`` redacted (written as
    ``chronicle export --view`` writes CSV, so the other rows keep their bytes)."""
    scrub = scrubber(value)
    with (
        source.open(encoding="utf-8", newline="") as rows,
        draft.open("w", encoding="utf-8", newline="") as out,
    ):
        writer = csv.writer(out, lineterminator="\n")
        for row in csv.reader(rows):
            writer.writerow([scrub(cell) for cell in row])


# -- JSON ----------------------------------------------------------------------------------


def redact_json(source: Path, draft: Path, value: Values) -> None:
    """A JSON document (an ATIF trajectory) to ``draft`` with each string holding ``value``
    redacted, written as ``chronicle export --format atif`` writes it."""
    document = json.loads(source.read_bytes())
    scrubbed = scrubber(value)(document)
    text = json.dumps(scrubbed, ensure_ascii=False, indent=2) + "\n"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON's escape carries it
        data = (json.dumps(scrubbed, ensure_ascii=True, indent=2) + "\n").encode()
    draft.write_bytes(data)


# -- Parquet -------------------------------------------------------------------------------


def searched_type(field_type: Any, pa: Any) -> bool:
    """Could a column of this type hold text? (Numbers, times and booleans cannot.)"""
    types = pa.types
    return not (
        types.is_integer(field_type)
        or types.is_floating(field_type)
        or types.is_boolean(field_type)
        or types.is_temporal(field_type)
        or types.is_decimal(field_type)
        or types.is_null(field_type)
    )


def parquet_cells_holding(path: Path, value: Values) -> list[str]:
    """Where a Parquet file's decoded cells hold ``value``: ``row N (column)``, 1-based."""
    pa, parquet = pyarrow_modules()
    scrub = scrubber(value)
    found: list[tuple[int, int, str]] = []
    first = 1
    source = parquet.ParquetFile(str(path))
    for batch in source.iter_batches(batch_size=BATCH_ROWS):
        for index, column in enumerate(batch.columns):
            if not searched_type(column.type, pa):
                continue
            for offset, cell in enumerate(column.to_pylist()):
                if cell is not None and scrub(cell) != cell:
                    found.append((first + offset, index, batch.schema.names[index]))
        first += batch.num_rows
    return [f"row {row} ({name})" for row, _, name in sorted(found)]


def redact_parquet(source: Path, draft: Path, value: Values) -> None:
    """``source``'s rows to ``draft`` (same schema, its metadata kept), each cell holding
    ``value`` redacted."""
    pa, parquet = pyarrow_modules()
    scrub = scrubber(value)
    reader = parquet.ParquetFile(str(source))
    schema = reader.schema_arrow
    with parquet.ParquetWriter(str(draft), schema) as writer:
        for batch in reader.iter_batches(batch_size=BATCH_ROWS):
            columns = []
            for column in batch.columns:
                if searched_type(column.type, pa):
                    cells = column.to_pylist()
                    scrubbed = [scrub(cell) for cell in cells]
                    if scrubbed != cells:
                        column = pa.array(scrubbed, type=column.type)
                columns.append(column)
            writer.write_table(pa.Table.from_arrays(columns, schema=schema))
