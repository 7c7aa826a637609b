"""Agents by name: what `chronicle replay --agent NAME` can choose from."""

from __future__ import annotations

import pytest

from app.agent.codeact import CodeActAgent
from app.agent.registry import AGENTS, UnknownAgent, agent_class
from app.agent.shell_only import ShellOnlyAgent
from app.llm import LlmConfig, LlmGateway


def test_the_registered_agents_by_name() -> None:
    assert dict(AGENTS) == {"codeact": CodeActAgent, "shell-only": ShellOnlyAgent}
    assert agent_class("shell-only") is ShellOnlyAgent
    with pytest.raises(UnknownAgent, match="no agent 'nosuch'; the registered agents are: "):
        agent_class("nosuch")


def test_the_shell_agent_differs_in_its_prompt_and_tools() -> None:
    gateway = LlmGateway(None, LlmConfig(model="m"))  # type: ignore[arg-type]
    shell = ShellOnlyAgent(gateway, "/workspace")
    codeact = CodeActAgent(gateway, "/workspace")
    assert [t["function"]["name"] for t in shell.tools()] == ["execute_bash", "finish"]
    assert len(codeact.tools()) == 4
    system = shell.messages([])[0]["content"]
    assert "shell agent" in system and "/workspace" in system
    narrowed = ShellOnlyAgent(
        gateway, "/w", builtin_tools=["finish"], system_prompt="x {workspace}"
    )
    assert [t["function"]["name"] for t in narrowed.tools()] == ["finish"]
    assert narrowed.messages([])[0]["content"] == "x /w"
