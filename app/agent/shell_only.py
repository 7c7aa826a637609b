"""A CodeAct agent with the shell alone: no editor, no think tool.

A deliberately different agent, registered beside CodeAct (``app.agent.registry``): it
offers ``execute_bash`` and ``finish`` only and tells the model to read and change files with
shell commands, as an agent for a small model with a short tool list would. Replaying a
CodeAct recording with it (``chronicle replay --agent shell-only``) shows what a change of
agent looks like against recordings: its first request differs (the tools, the prompt),
and where the recorded model used the editor it cannot act as recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.agent.codeact import CodeActAgent, ModelGateway

TOOLS = ("execute_bash", "finish")

SYSTEM_PROMPT = """You are Chronicle's shell agent. You work in a sandbox on the user's task.

Workspace: {workspace}
- You have one tool to act with: execute_bash. Read files with cat, sed -n or grep; change
  them with sed -i, patch or a heredoc (cat > file <<'EOF'); run what you wrote.
- Work in small steps: look before you change, read errors and fix them.
- Commands have no network unless the user enabled it.
- When the task is done, call finish with a short summary. If you need something from the
  user, ask in plain text (no tool call) and wait for the answer.
"""


class ShellOnlyAgent(CodeActAgent):
    name = "shell-only"
    offers = TOOLS

    def __init__(
        self,
        gateway: ModelGateway,
        workspace: str,
        *,
        mcp_tools: list[dict[str, Any]] | None = None,
        mcp_index: dict[str, tuple[str, str]] | None = None,
        system_prompt: str | None = None,
        builtin_tools: Sequence[str] | None = None,
    ) -> None:
        """As ``CodeActAgent``; its own prompt, and of the built-in tools only the shell and
        ``finish`` (``offers``; ``builtin_tools`` narrows them further)."""
        super().__init__(
            gateway,
            workspace,
            mcp_tools=mcp_tools,
            mcp_index=mcp_index,
            system_prompt=SYSTEM_PROMPT if system_prompt is None else system_prompt,
            builtin_tools=builtin_tools,
        )
