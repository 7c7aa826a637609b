"""How to reach one MCP server (a [[mcp_servers]] table in the TOML file)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator


class McpServerConfig(BaseModel):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    transport: Literal["stdio", "sse", "http"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    start_timeout: float = Field(default=30.0, gt=0)
    call_timeout: float = Field(default=60.0, gt=0)

    @model_validator(mode="after")
    def _target(self) -> McpServerConfig:
        if self.transport == "stdio" and not self.command:
            raise ValueError(f"MCP server {self.name!r}: a stdio server needs a command")
        if self.transport != "stdio" and not self.url:
            raise ValueError(f"MCP server {self.name!r}: an {self.transport} server needs a url")
        return self

    def public(self) -> dict[str, object]:
        """For the log: how it is reached, without the environment (it may hold secrets)."""
        return {
            "name": self.name,
            "transport": self.transport,
            "command": self.command,
            "args": self.args,
            "url": self.url,
        }
