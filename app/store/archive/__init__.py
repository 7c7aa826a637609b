"""Whole sessions in a file and back: export (JSON lines), offline verification, import; and
archive directories (JSONL, Parquet, anchors, a manifest) that prove themselves and that
DuckDB reads in place."""

from app.store.archive.checker import CheckedSession, FileReport, check_file
from app.store.archive.detaching import (
    DetachPlan,
    MonthVerdict,
    detach_month,
    plan_detaching,
)
from app.store.archive.directory import DirectoryReport, check_directory
from app.store.archive.loader import ImportRefused, ImportReport, import_file
from app.store.archive.manifest import (
    ANCHORS,
    EVENTS_PARQUET,
    MANIFEST,
    MANIFEST_SIGNATURE,
    MESSAGES_PARQUET,
    PARQUET_TABLES,
    SESSION_STATE_PARQUET,
    SESSIONS_JSONL,
    SESSIONS_PARQUET,
    ArchivedSession,
    ArchiveManifest,
    ManifestError,
    described,
    read_manifest,
    sign_manifest,
)
from app.store.archive.marks import ArchiveRaceError, archived_sessions, mark_archived
from app.store.archive.parquet import WrittenTables, write_parquet_tables
from app.store.archive.querying import ArchiveQueryError, query_archive
from app.store.archive.writer import ExportError, export_sessions

__all__ = [
    "ANCHORS",
    "EVENTS_PARQUET",
    "MANIFEST",
    "MANIFEST_SIGNATURE",
    "MESSAGES_PARQUET",
    "PARQUET_TABLES",
    "SESSIONS_JSONL",
    "SESSIONS_PARQUET",
    "SESSION_STATE_PARQUET",
    "ArchiveManifest",
    "ArchiveQueryError",
    "ArchiveRaceError",
    "ArchivedSession",
    "CheckedSession",
    "DetachPlan",
    "DirectoryReport",
    "ExportError",
    "FileReport",
    "ImportRefused",
    "ImportReport",
    "ManifestError",
    "MonthVerdict",
    "WrittenTables",
    "archived_sessions",
    "check_directory",
    "check_file",
    "described",
    "detach_month",
    "export_sessions",
    "import_file",
    "mark_archived",
    "plan_detaching",
    "query_archive",
    "read_manifest",
    "sign_manifest",
    "write_parquet_tables",
]
