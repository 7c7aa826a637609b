"""Read models built from the log: the runner, rebuilds, and the projections themselves.

A projection (``Projection``) folds events into tables it owns; a ``ProjectionRunner`` applies
it in global order with its position in the same transaction, in one process at a time;
``rebuild`` recomputes it from the start of the log and swaps it in; ``bring_up_to_date``
lets a reader catch it up when no runner is live. ``session_state`` is the first projection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.exports import lazy_exports

if TYPE_CHECKING:
    from app.projections.base import Projection
    from app.projections.catch_up import catch_up, rebuild
    from app.projections.config import ProjectionsConfig
    from app.projections.registry import (
        PROJECTIONS,
        UnknownProjectionError,
        all_projections,
        projection_named,
    )
    from app.projections.runner import ProjectionRunner, running_projections
    from app.projections.session_state import SESSION_STATE, SessionState, SessionStateRow
    from app.projections.up_to_date import bring_up_to_date

__all__ = [
    "PROJECTIONS",
    "SESSION_STATE",
    "Projection",
    "ProjectionRunner",
    "ProjectionsConfig",
    "SessionState",
    "SessionStateRow",
    "UnknownProjectionError",
    "all_projections",
    "bring_up_to_date",
    "catch_up",
    "projection_named",
    "rebuild",
    "running_projections",
]

#: Each export's module, imported on first use: ``app/config`` reads this package's config
#: model, and that must not import the whole package into every command.
_EXPORTED_FROM = {
    "Projection": "app.projections.base",
    "catch_up": "app.projections.catch_up",
    "rebuild": "app.projections.catch_up",
    "ProjectionsConfig": "app.projections.config",
    "PROJECTIONS": "app.projections.registry",
    "UnknownProjectionError": "app.projections.registry",
    "all_projections": "app.projections.registry",
    "projection_named": "app.projections.registry",
    "ProjectionRunner": "app.projections.runner",
    "running_projections": "app.projections.runner",
    "SESSION_STATE": "app.projections.session_state",
    "SessionState": "app.projections.session_state",
    "SessionStateRow": "app.projections.session_state",
    "bring_up_to_date": "app.projections.up_to_date",
}


__getattr__ = lazy_exports(__name__, _EXPORTED_FROM)
