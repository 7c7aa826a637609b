"""Rows as text, JSON, CSV and Parquet, typed by their PostgreSQL columns.

One rendering per value for every output: times in ISO 8601 (UTC as PostgreSQL gives them),
arrays and ``json`` as JSON, ``numeric`` exact in text and a number in JSON, ``bytea`` as
``\\x`` hex. Parquet needs pyarrow (the ``analytics`` extra) and gets real column types: a
``timestamptz`` is a UTC timestamp, ``text[]`` a list of strings, ``numeric`` a double.
"""

from __future__ import annotations

import csv
import json
from collections.abc import AsyncIterable, Sequence
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO
from uuid import UUID

from app.store.analytics.access import Column
from app.store.errors import StoreError


class MissingExtraError(StoreError):
    """An optional dependency is not installed; the message says how to install it."""


def json_value(value: Any) -> Any:
    """A value as JSON can hold it."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    if isinstance(value, list | tuple):
        return [json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    return str(value)  # UUID, addresses, ranges...


def text_value(value: Any) -> str:
    """A value as one cell of text (NULL is empty)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, float | int | Decimal | UUID):
        return str(value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(json_value(value), ensure_ascii=False)
    converted = json_value(value)
    return converted if isinstance(converted, str) else str(converted)


async def write_csv(
    out: TextIO, batches: AsyncIterable[tuple[list[Column], list[tuple[Any, ...]]]]
) -> int:
    """A header line of column names, then one line per row; the number of rows."""
    writer = csv.writer(out, lineterminator="\n")
    written, header = 0, False
    async for columns, rows in batches:
        if not header:
            writer.writerow([column.name for column in columns])
            header = True
        writer.writerows([text_value(value) for value in row] for row in rows)
        written += len(rows)
    return written


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise MissingExtraError(
            "writing Parquet needs pyarrow, which is not installed: "
            "pip install 'chronicle[analytics]' (or pip install pyarrow), or use --format csv"
        ) from None
    return pyarrow, pyarrow.parquet


def _arrow_type(pa: Any, type_name: str) -> Any:
    if type_name.startswith("_"):
        return pa.list_(_arrow_type(pa, type_name[1:]))
    simple = {
        "bool": pa.bool_(),
        "int2": pa.int16(),
        "int4": pa.int32(),
        "int8": pa.int64(),
        "float4": pa.float32(),
        "float8": pa.float64(),
        "numeric": pa.float64(),
        "date": pa.date32(),
        "timestamptz": pa.timestamp("us", tz="UTC"),
        "timestamp": pa.timestamp("us"),
        "interval": pa.duration("us"),
        "bytea": pa.binary(),
    }
    return simple.get(type_name, pa.string())


def _arrow_value(value: Any, type_name: str) -> Any:
    if value is None:
        return None
    if type_name.startswith("_"):
        return [_arrow_value(item, type_name[1:]) for item in value]
    if type_name == "numeric":
        return float(value)
    if type_name in ("bool", "int2", "int4", "int8", "float4", "float8", "date", "timestamptz",
                     "timestamp", "interval", "bytea"):  # fmt: skip
        return value
    return value if isinstance(value, str) else text_value(value)


async def write_parquet(
    path: Path, batches: AsyncIterable[tuple[list[Column], list[tuple[Any, ...]]]]
) -> int:
    """The rows as one Parquet file with the columns' types; the number of rows."""
    pa, parquet = _pyarrow()
    writer = None
    written = 0
    try:
        async for columns, rows in batches:
            schema = pa.schema([(c.name, _arrow_type(pa, c.type)) for c in columns])
            if writer is None:
                writer = parquet.ParquetWriter(str(path), schema)
            data = {
                column.name: [_arrow_value(row[i], column.type) for row in rows]
                for i, column in enumerate(columns)
            }
            writer.write_table(pa.Table.from_pydict(data, schema=schema))
            written += len(rows)
    finally:
        if writer is not None:
            writer.close()
    return written


def aligned_table(columns: Sequence[Column], rows: Sequence[tuple[Any, ...]]) -> str:
    """psql's aligned format: a header, a rule, numbers to the right, a row count."""
    numeric = {"int2", "int4", "int8", "float4", "float8", "numeric"}
    cells = [[text_value(value).replace("\n", "\\n") for value in row] for row in rows]
    widths = [
        max([len(column.name), *(len(line[i]) for line in cells)])
        for i, column in enumerate(columns)
    ]

    def line(values: Sequence[str], right: Sequence[bool]) -> str:
        parts = [
            value.rjust(width) if flush else value.ljust(width)
            for value, width, flush in zip(values, widths, right, strict=True)
        ]
        return (" " + " | ".join(parts)).rstrip()

    right = [column.type in numeric for column in columns]
    text = [
        line([c.name for c in columns], [False] * len(columns)),
        "-" + "-+-".join("-" * width for width in widths) + "-",
        *(line(values, right) for values in cells),
        f"({len(rows)} row{'' if len(rows) == 1 else 's'})",
    ]
    return "\n".join(text)
