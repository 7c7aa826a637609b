"""Which model to call and how. The settings hold an ``LlmSettings`` (``settings.llm``, the
``llm_*`` settings), whose ``config()`` makes the ``LlmConfig`` of one session with its
overrides; the gateway never reads the settings itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator


def read_secret_file(path: Path) -> str:
    """A secret kept in a file (first line, surrounding whitespace removed)."""
    try:
        text = path.expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the key file {path}: {exc.strerror or exc}") from None
    value = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not value:
        raise ValueError(f"the key file {path} is empty")
    return value


class LlmOptions(BaseModel):
    """How the model is called: everything but which model (each field declared once, here)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

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
    """Call an OpenAI-compatible upstream (openai/<name> at a base URL) directly, without
    litellm's per-call work, when litellm would send the request unchanged (plain messages,
    function tools; ``app.llm.direct``, a streamed one ``app.llm.direct_stream``); false:
    every call through litellm."""
    max_concurrency: int = Field(default=8, ge=1)
    """Calls in flight per model."""
    native_tool_calling: bool | None = None
    """None: native unless litellm's model map says the model cannot call tools (unknown
    models, e.g. behind an OpenAI-compatible base URL, are native); false: tools described
    in the prompt."""
    vision: bool | None = None
    """Whether image parts (an MCP tool's images) are sent. None: unless litellm's model map
    says the model takes no images; false: each image is replaced by a note."""


class LlmConfig(LlmOptions):
    """One session's model: its name always given."""

    model: str
    """litellm's model name, e.g. ``openai/gpt-4o``."""

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


class LlmSettings(LlmOptions):
    """The configured model (``settings.llm``): the options, a model that may not be named
    yet, and a key that may be kept in a file."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    """litellm's model name, e.g. ``openai/gpt-4o``; a session may name its own."""
    api_key_file: Path | None = None
    """A file holding the key (safer than the environment or ``--api-key``); read when no
    key is given directly."""

    @model_validator(mode="after")
    def _key_from_file(self) -> Self:
        if self.api_key is None and self.api_key_file is not None:
            key = SecretStr(read_secret_file(self.api_key_file))
            return self.model_copy(update={"api_key": key})
        return self

    def config(self, **overrides: Any) -> LlmConfig:
        """One session's config: these settings with its overrides (None means 'keep'). Not a
        copy: it checks that a model is named somewhere, or raises ``LlmNotConfiguredError``
        (whose message says how to name one)."""
        from app.llm.errors import LlmNotConfiguredError

        values = self.model_dump(exclude={"api_key_file"})
        values.update({key: value for key, value in overrides.items() if value is not None})
        if not values.get("model"):
            raise LlmNotConfiguredError()
        if isinstance(values.get("api_key"), str):
            values["api_key"] = SecretStr(values["api_key"])
        return LlmConfig(**values)
