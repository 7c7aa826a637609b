"""Where an imported event came from: another agent's recording (see app/interchange/importers).

An event written by ``chronicle import --from FORMAT`` carries one of these in its payload
under ``imported``; every other event leaves the key out. A replay or a fork of an imported
session marks its copies ``replayed_from`` instead (the copy was served from the log, not
read from the file), so ``imported`` is left out of their payloads.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ImportOrigin(BaseModel):
    """``format`` (``openhands``, ``swe-agent``) and ``file`` (its name, no directory) say
    which recording; ``line`` the line of a JSONL file holding several, ``attempt`` the
    attempt of a file holding several (SWE-agent's retry loop); ``index`` the item's
    position in its list (an OpenHands event, a SWE-agent trajectory step), ``id`` the item's
    own id when it has one, ``field`` which part of the item this event was made from (a
    step's ``response``, ``action``, ``observation``; ``end`` for the ending the importer
    inferred); ``kept`` what of the item no field of the event holds, verbatim, so an export
    to the recording's format gives it back (ATIF's extras and timestamps, a tool's name as
    the other agent called it; a key whose value is null was absent from the item)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str
    file: str
    line: int | None = Field(default=None, ge=1)
    attempt: int | None = Field(default=None, ge=0)
    index: int | None = Field(default=None, ge=0)
    id: str | None = None
    field: str = ""
    kept: dict[str, Any] | None = None
