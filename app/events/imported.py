"""Another agent's actions that no Chronicle tool expresses, and their answers.

``chronicle import --from FORMAT`` (app/interchange/importers) maps what another agent did to
Chronicle's kinds where they correspond (a shell command is a ``run``, a file view or edit a
``file.edit``, finishing a ``finish``). Anything else — a browser action, an IPython cell, a
delegation, an action type the importer has never seen — is kept as an ``imported`` action
with the tool's name and arguments as recorded, and what answered it as ``imported.output``.
Nothing runs them: no service handles them, and a replay that meets one diverges there.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from app.events.base import Action, Event, Observation


class ImportedAction(Action):
    """``tool`` is the action type or tool name as the other agent recorded it,
    ``arguments`` its arguments as recorded."""

    kind: Literal["imported"] = "imported"
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ImportedOutput(Observation):
    """An answer no Chronicle observation expresses: ``observation`` is its type as recorded,
    ``content`` its text, ``extras`` its other fields."""

    kind: Literal["imported.output"] = "imported.output"
    observation: str = ""
    content: str = ""
    extras: dict[str, Any] = Field(default_factory=dict)


#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = (
    ImportedAction,
    ImportedOutput,
)
