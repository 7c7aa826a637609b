"""The MCP tool service: per-session MCP servers whose tools the agent can call."""
