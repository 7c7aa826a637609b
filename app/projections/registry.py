"""The projections Chronicle keeps, by name."""

from __future__ import annotations

from app.errors import ChronicleError
from app.projections.base import Projection
from app.projections.session_state import SessionState

#: Every projection a runner keeps current (``chronicle projections run`` runs them all).
PROJECTIONS: tuple[type[Projection], ...] = (SessionState,)


class UnknownProjectionError(ChronicleError, ValueError):
    def __init__(self, name: str) -> None:
        known = ", ".join(p.name for p in PROJECTIONS)
        super().__init__(f"there is no projection {name!r}; the projections are: {known}")


def projection_named(name: str) -> Projection:
    for projection in PROJECTIONS:
        if projection.name == name:
            return projection()
    raise UnknownProjectionError(name)


def all_projections() -> list[Projection]:
    return [projection() for projection in PROJECTIONS]
