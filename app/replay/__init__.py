"""Replay: re-feed a recorded session into the real agent and controller without calling the
model or touching a sandbox, and name the first step where the agent behaves differently.

``canonical`` and ``requests`` compare (pure); ``divergence`` types what they find;
``recording`` reads a recorded session (``redactions``: what was redacted from it);
``gateway`` and ``answers`` serve it; ``engine`` runs a replay as a session of its own
(``replay``).
"""

from app.replay.agent_config import AgentConfig
from app.replay.divergence import (
    ActionDivergence,
    Divergence,
    ExtraCall,
    MissingCall,
    OutcomeDivergence,
    RedactedDivergence,
    RedactedPart,
    RequestDivergence,
)
from app.replay.engine import RedactedReplayError, ReplayError, ReplayMode, ReplayResult, replay

__all__ = [
    "ActionDivergence",
    "AgentConfig",
    "Divergence",
    "ExtraCall",
    "MissingCall",
    "OutcomeDivergence",
    "RedactedDivergence",
    "RedactedPart",
    "RedactedReplayError",
    "ReplayError",
    "ReplayMode",
    "ReplayResult",
    "RequestDivergence",
    "replay",
]
