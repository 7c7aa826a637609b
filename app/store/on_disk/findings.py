"""What a search of the disk reports, one file at a time."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from app.store.archive.parquet import pyarrow_modules
from app.store.on_disk.forms import Values
from app.store.on_disk.tables import lines_holding, parquet_cells_holding

PARQUET_MAGIC = b"PAR1"


class Finding(BaseModel):
    """A file that held the value: where, whether it was rewritten without it, and why not
    (or what of it the file still holds)."""

    path: str
    #: ``line N`` of a text file, ``row N (column)`` of a Parquet file, 1-based.
    found_at: list[str]
    rewritten: bool
    problem: str = ""

    @property
    def cleared(self) -> bool:
        """Rewritten, and the value is in it no more."""
        return self.rewritten and not self.problem


def is_parquet(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(4) == PARQUET_MAGIC


def where_in_file(path: Path, value: Values) -> list[str]:
    """Where a file holds ``value`` (or any of several): a Parquet file's decoded cells, any
    other file's lines."""
    if is_parquet(path):
        pyarrow_modules()  # the extra named if it is missing
        return parquet_cells_holding(path, value)
    return [f"line {number}" for number in lines_holding(path, value)]
