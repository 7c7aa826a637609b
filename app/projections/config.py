"""What the projection runners are told (``settings.projections``), and the live OTLP
exporter that runs beside them (``settings.otlp_export``)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import NoDecode


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
    partitions_interval: float = Field(default=3600.0, gt=0)
    """Seconds between two checks that the next months of events have their partitions."""
    partitions_ahead: int = Field(default=2, ge=1, le=24)
    """Months after the current one whose partitions are kept made (an append into a month
    without one fails)."""
    rollups_interval: float = Field(default=5.0, gt=0)
    """Seconds between two refreshes of the usage rollups behind ``daily_usage`` and
    ``session_costs`` (the views are current either way; a refresh keeps them fast)."""


class OtlpExportConfig(BaseModel):
    """The live OTLP exporter (``settings.otlp_export``): a follower of the log that sends
    each session's spans to an OpenTelemetry collector as they are recorded, beside the
    projections (docs/opentelemetry.md, "Live export")."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, extra="forbid")

    url: str | None = None
    """OTLP/HTTP collector the live exporter sends spans to (its /v1/traces); unset: off.
    Where projections run (`chronicle serve`, `chronicle projections run`), one process sends."""
    headers: Annotated[dict[str, SecretStr], NoDecode] = Field(default_factory=dict)
    """HTTP headers for the collector (e.g. its API key): a TOML table, or NAME=VALUE pairs
    separated by commas (as OTEL_EXPORTER_OTLP_HEADERS)."""
    content: bool = False
    """Send message contents and tool arguments and results too (as `export --content`)."""
    timeout: float = Field(default=30.0, gt=0)
    """Seconds one request to the collector may take before it counts as failed (retried)."""
    max_backoff: float = Field(default=60.0, gt=0)
    """Longest pause, in seconds, between tries of a collector that is down or refuses."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{value!r} is not an http(s) URL of an OTLP collector")
        return value

    @field_validator("headers", mode="before")
    @classmethod
    def _pairs(cls, value: object) -> object:
        """``NAME=VALUE,NAME=VALUE`` (an environment variable) as well as a table."""
        if not isinstance(value, str):
            return value
        pairs = {}
        for item in value.split(","):
            name, sep, text = item.partition("=")
            if not item.strip():
                continue
            if not sep or not name.strip():
                raise ValueError(f"{item.strip()!r} is not NAME=VALUE")
            pairs[unquote(name.strip())] = unquote(text.strip())
        return pairs

    def header_values(self) -> dict[str, str]:
        return {name: value.get_secret_value() for name, value in self.headers.items()}
