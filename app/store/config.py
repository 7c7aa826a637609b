"""What the store is told by whoever opens it; the settings hold a ``StoreConfig``
(``settings.store``) and build the ``DatabaseConfig``.

The store never reads the application's ``Settings`` (docs/architecture.md, the import rule):
its callers decide, and tests and tools can open a store without a settings file.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class StoreConfig(BaseModel):
    """Limits, pool sizes and polling of one ``EventStore``."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, extra="forbid")

    max_event_bytes: int = Field(default=1024 * 1024, gt=0)
    """Largest payload of one event, after its long strings are moved to blobs."""
    blob_threshold_bytes: int = Field(default=64 * 1024, ge=1024)
    """A payload string longer than this (UTF-8 bytes) is stored once in the blobs table."""
    pool_min_size: int = Field(default=1, ge=0)
    """Connections kept open when idle."""
    pool_max_size: int = Field(default=10, ge=1)
    """Connections at most; running a session needs 2 (one holds its claim)."""
    poll_interval: float = Field(default=2.0, gt=0)
    """Seconds between fallback polls of a quiet subscription and keepalives of the listener."""
    statement_timeout: float = Field(default=300.0, ge=0)
    """Seconds one statement of the store's connections may run before PostgreSQL cancels it
    (0: no limit). A bound no query of the application comes near, so a runaway one ends
    instead of holding a connection for ever; what legitimately runs longer (archive, import,
    ``verify --all``, a projection rebuild) opens its store with 0 (``long_running``)."""

    def long_running(self) -> StoreConfig:
        """For a command whose statements may legitimately run for long (archive, import,
        ``verify --all``, a rebuild): no statement timeout."""
        return self.model_copy(update={"statement_timeout": 0})


class DatabaseConfig(BaseModel):
    """Which PostgreSQL: a configured server, or the embedded one in ``data_dir``."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    database_url: str | None = None
    """A server of the operator's; None: the embedded server of ``data_dir``."""
    data_dir: Path
    """Chronicle's data directory; the embedded server lives in its ``postgres/``."""
    analyst_database_url: str | None = None
    """A login in ``chronicle_analyst`` (read-only analytics); None: the embedded server's."""
    read_database_urls: tuple[str, ...] = ()
    """Hot standbys the log's reads may go to (app/store/read_replicas.py); empty: none."""
    owner_database_url: str | None = None
    """The owner's login (migrations, admins and their tokens); None: ``database_url``, or the
    embedded server's superuser."""
