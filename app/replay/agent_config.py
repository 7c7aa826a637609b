"""The agent configuration a replay runs with: as recorded, with the changes to try."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: Model parameters a replay may change, and the gateway setting each one is.
MODEL_PARAMS = {"temperature": "temperature", "max_tokens": "max_output_tokens"}


class AgentConfig(BaseModel):
    """Overrides of what ``session.created`` recorded; None (or empty) keeps the recording's.

    ``system_prompt`` replaces the agent's prompt (``{workspace}`` is filled in); ``tools``
    names the tools offered (built-in and MCP, by the name the model sees);
    ``max_iterations`` caps model calls (by default at least as many as the recording made:
    a resume may have raised the recorded limit without saying so); ``model_params`` sets
    ``temperature`` or ``max_tokens`` as the model would have been sent them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str = "codeact"
    system_prompt: str | None = None
    tools: list[str] | None = None
    max_iterations: int | None = Field(default=None, ge=1)
    model_params: dict[str, Any] = Field(default_factory=dict)
    stuck_detection: bool | None = None

    def over(self, recorded: dict[str, Any] | None) -> AgentConfig:
        """These overrides on top of ``recorded`` ones (the ``agent_config`` a replay or a fork
        recorded in its ``session.created``): what is set here wins (even when set to the
        default: ``--agent codeact`` over a recorded ``shell-only``), model parameters merge."""
        if not recorded:
            return self
        base = AgentConfig.model_validate(recorded)
        mine = self.model_dump(exclude_unset=True)
        merged = {**base.model_dump(), **mine}
        merged["model_params"] = {**base.model_params, **self.model_params}
        return AgentConfig.model_validate(merged)

    def llm_overrides(self) -> dict[str, Any]:
        """``model_params`` as gateway settings; ``ValueError`` names an unknown one."""
        unknown = sorted(set(self.model_params) - set(MODEL_PARAMS))
        if unknown:
            raise ValueError(
                f"unknown model parameter {', '.join(unknown)}; a replay can set "
                f"{', '.join(MODEL_PARAMS)}"
            )
        return {MODEL_PARAMS[key]: value for key, value in self.model_params.items()}
