"""Whole sessions in a file and back: export (JSON lines), offline verification, import."""

from app.store.archive.checker import CheckedSession, FileReport, check_file
from app.store.archive.loader import ImportRefused, ImportReport, import_file
from app.store.archive.writer import ExportError, export_sessions

__all__ = [
    "CheckedSession",
    "ExportError",
    "FileReport",
    "ImportRefused",
    "ImportReport",
    "check_file",
    "export_sessions",
    "import_file",
]
