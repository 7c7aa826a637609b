"""Which model to call and how: from CHRONICLE_LLM_* settings, the TOML file, or per session."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from app.config import Settings
from app.llm.errors import LlmNotConfiguredError


class LlmConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    base_url: str | None = None
    api_key: SecretStr | None = None
    api_version: str | None = None
    temperature: float = 0.0
    max_output_tokens: int | None = None
    timeout: float = Field(default=120.0, gt=0)
    retries: int = Field(default=5, ge=0)
    retry_min_wait: float = Field(default=1.0, ge=0)
    retry_max_wait: float = Field(default=60.0, ge=0)
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    max_concurrency: int = Field(default=8, ge=1)
    native_tool_calling: bool | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> LlmConfig:
        """The settings' ``llm_*`` fields, with per-session overrides (None means 'keep')."""
        values = {
            name.removeprefix("llm_"): getattr(settings, name)
            for name in type(settings).model_fields
            if name.startswith("llm_")
        }
        values["max_output_tokens"] = settings.llm_max_output_tokens
        values.update({key: value for key, value in overrides.items() if value is not None})
        if not values.get("model"):
            raise LlmNotConfiguredError()
        if isinstance(values.get("api_key"), str):
            values["api_key"] = SecretStr(values["api_key"])
        return cls(**values)

    def public(self) -> dict[str, Any]:
        """What may be recorded in the log: everything but the key."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "api_version": self.api_version,
            "temperature": self.temperature,
            "max_output_tokens": self.max_output_tokens,
            "timeout": self.timeout,
            "retries": self.retries,
        }
