"""What the projection runners are told (``settings.projections``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ProjectionsConfig(BaseModel):
    """Where projections run, and how their runners pace themselves."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, extra="forbid")

    inline: bool = True
    """Run the projections inside the Chronicle process (``chronicle run``); off when a
    ``chronicle projections run`` process of their own keeps them current."""
    standby_interval: float = Field(default=2.0, gt=0)
    """Seconds between a waiting runner's attempts to take over from the one applying."""
    batch_size: int = Field(default=2000, ge=1)
    """Most events applied in one transaction."""
    drain_timeout: float = Field(default=5.0, ge=0)
    """Seconds a stopping runner may take to apply what is left before it lets go."""
