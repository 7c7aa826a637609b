"""Other agents' recordings as Chronicle sessions (``chronicle import --from FORMAT FILE``).

One module per format turns a file's bytes into ``ImportedSession``s (pure code: the field
by field mapping is in each module's docstring); ``writing.py`` appends them through the
event store. ``model.py`` is what both formats share: identities, model calls, the ending.
"""

from __future__ import annotations

from collections.abc import Callable

from app.interchange.importers.model import ImportedSession, ImportProblem
from app.interchange.importers.openhands import import_openhands
from app.interchange.importers.swe_agent import import_swe_agent


def import_atif(file: str, data: bytes) -> list[ImportedSession]:
    """An ATIF trajectory (app/interchange/atif/to_events.py, with the export it shares its
    mapping with; imported when used, since that module builds on this package's model)."""
    from app.interchange.atif.to_events import import_atif as read_atif

    return read_atif(file, data)


#: format name -> the function reading a file of it: (file name, bytes) -> sessions
IMPORTERS: dict[str, Callable[[str, bytes], list[ImportedSession]]] = {
    "atif": import_atif,
    "openhands": import_openhands,
    "swe-agent": import_swe_agent,
}

__all__ = ["IMPORTERS", "ImportProblem", "ImportedSession", "read_recording"]


def read_recording(format_name: str, file: str, data: bytes) -> list[ImportedSession]:
    """The sessions of a recording in ``format_name``; ``ImportProblem`` when it cannot be
    read (the message names the file, the item and the field)."""
    importer = IMPORTERS.get(format_name)
    if importer is None:
        raise ImportProblem(
            file, f"unknown format {format_name!r}; the formats are: {', '.join(IMPORTERS)}"
        )
    return importer(file, data)
