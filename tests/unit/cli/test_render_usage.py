"""`chronicle events` shows an unknown token count as unknown (pure code)."""

from __future__ import annotations

from app.cli.render import summarize
from app.events import LlmCall, LlmUsage


def test_the_terminal_line_says_unknown_not_none() -> None:
    usage = LlmUsage(prompt_tokens=None, completion_tokens=5)
    line = summarize("llm.call", LlmCall(model="m", fingerprint="f", usage=usage).payload())
    assert "in=? out=5" in line  # before: "in=None"
