"""What a projection is: a name, a version, the tables it owns, and a fold over events.

A projection never runs SQL (only app/projections/sql does, docs/architecture.md): it declares
its tables (``Table``: name, key, typed columns, the dataclass of a row; the tables themselves are
created by migrations) and ``apply`` folds one event into the rows it is handed — the
``ProjectionRows`` of the transaction that applies the batch, which stands where
a connection would. So ``apply`` does no I/O, a batch of thousands of events costs a few
statements, and the fold can be tested without a database.

Bump ``version`` whenever ``apply`` would compute different rows from the same log: a
runner that finds tables built by an older version rebuilds them from the log first.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar

from app.projections.sql.projection_store import ProjectionRows, Table
from app.store import RecordedEvent


class Projection(ABC):
    """A read model built from the whole log, one event at a time, in global order."""

    #: Its name in ``projections`` and on the command line.
    name: ClassVar[str]
    #: The version of ``apply``; tables built by an older one are rebuilt on start.
    version: ClassVar[int]
    #: The tables it owns (created by migrations; it writes no other).
    tables: ClassVar[tuple[Table[Any], ...]]

    @abstractmethod
    def keys(self, event: RecordedEvent) -> Iterable[tuple[Table[Any], Any]]:
        """The rows ``event`` may read or write, as (table, key): loaded before the batch."""

    @abstractmethod
    def apply(self, rows: ProjectionRows, event: RecordedEvent) -> None:
        """Fold ``event`` into ``rows``: ``rows.get(table, key)``, change, ``rows.put``."""
