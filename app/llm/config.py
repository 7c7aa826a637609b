"""Which model to call and how. ``Settings.llm_config()`` builds it from the ``llm_*`` settings
and a session's overrides; the gateway never reads the settings itself."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class LlmConfig(BaseModel):
    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    model: str
    """litellm's model name, e.g. ``openai/gpt-4o``."""
    base_url: str | None = None
    """An OpenAI-compatible endpoint; None: the provider's own."""
    api_key: SecretStr | None = None
    """Never recorded (see ``public``)."""
    api_version: str | None = None
    temperature: float = Field(default=0.0, ge=0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    timeout: float = Field(default=120.0, gt=0)
    """Seconds per attempt."""
    retries: int = Field(default=5, ge=0)
    """Retries of retryable failures."""
    retry_min_wait: float = Field(default=1.0, ge=0)
    retry_max_wait: float = Field(default=60.0, ge=0)
    input_cost_per_token: float | None = Field(default=None, ge=0)
    """A price for models litellm does not know; None: litellm's price, if any."""
    output_cost_per_token: float | None = Field(default=None, ge=0)
    direct_calls: bool = True
    """Call an OpenAI-compatible upstream directly when litellm would send the request as it
    is (``app.llm.direct``, a streamed one ``app.llm.direct_stream``); false: every call
    through litellm."""
    max_concurrency: int = Field(default=8, ge=1)
    """Calls in flight per model."""
    native_tool_calling: bool | None = None
    """None: native unless litellm's model map says the model cannot call tools; false:
    tools described in the prompt."""
    vision: bool | None = None
    """Whether image parts (an MCP tool's images) are sent. None: unless litellm's model map
    says the model takes no images; false: each image is replaced by a note."""

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
