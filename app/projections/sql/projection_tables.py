"""The tables a projection owns, and the rows of one batch that its fold reads and changes.

A projection declares each table it owns as a ``Table`` (name, key, columns with their
PostgreSQL types in order, and the dataclass of a row) so that the store can load and write
its rows without the projection running SQL; the table itself is created by a migration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Generic, Protocol, TypeVar

from app.store import RecordedEvent

RowT = TypeVar("RowT")


@dataclass(frozen=True, eq=False)
class Table(Generic[RowT]):
    """A table a projection owns: its name, its key column, its columns in order with their
    PostgreSQL types, and the dataclass of its rows (fields named like the columns).
    The table itself is created by a migration (a test compares the two)."""

    name: str
    key: str
    columns: tuple[tuple[str, str], ...]
    row_type: type[RowT]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    def values(self, row: RowT) -> tuple[Any, ...]:
        return attrgetter(*self.column_names)(row)  # type: ignore[no-any-return]

    def key_type(self) -> str:
        return dict(self.columns)[self.key]


class ProjectionCode(Protocol):
    """What the store needs of a projection (``app.projections.Projection`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int: ...

    @property
    def tables(self) -> tuple[Table[Any], ...]: ...

    def keys(self, event: RecordedEvent) -> Iterable[tuple[Table[Any], Any]]:
        """The rows ``event`` may touch: (table, key) pairs, loaded before it is applied."""
        ...

    def apply(self, rows: ProjectionRows, event: RecordedEvent) -> None:
        """Fold ``event`` into ``rows`` (no I/O)."""
        ...


class ProjectionRows:
    """The rows of one batch: what ``apply`` reads and changes in place of a connection.

    Loaded before the batch (``get`` is then a dict lookup) and written after it, so a batch
    of thousands of events costs a few statements, not one per event.
    """

    def __init__(self) -> None:
        self._rows: dict[Table[Any], dict[Any, Any]] = {}
        self._changed: dict[Table[Any], set[Any]] = {}

    def get(self, table: Table[RowT], key: Any) -> RowT | None:
        """The row under ``key`` as it stands in this batch, or None."""
        return self._rows.get(table, {}).get(key)

    def put(self, table: Table[RowT], row: RowT) -> None:
        """Keep ``row`` (new, or one ``get`` returned and changed): it is written at the end."""
        key = getattr(row, table.key)
        self._rows.setdefault(table, {})[key] = row
        self._changed.setdefault(table, set()).add(key)

    def loaded(self, table: Table[RowT], rows: Iterable[RowT]) -> None:
        known = self._rows.setdefault(table, {})
        for row in rows:
            known[getattr(row, table.key)] = row

    def changed(self) -> Iterable[tuple[Table[Any], list[Any]]]:
        for table, keys in self._changed.items():
            rows = self._rows[table]
            yield table, [rows[key] for key in keys]
