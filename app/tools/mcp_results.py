"""An MCP tool's result as an ``mcp.result`` observation.

Content blocks are kept as MCP writes them (``mimeType``, base64 ``data``), so an image
reaches a vision model as an image; large values go to the store's blobs. Text is cut like
command output: when a result's text blocks hold more than ``MAX_RESULT_CHARS`` characters
they become one block of their head and tail around a marker counting what was removed.
``structuredContent`` is kept when its JSON fits in that budget too (tools also send it as
text, which is what gets cut).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from app.events import McpResult
from app.events.truncation import cut_middle

if TYPE_CHECKING:
    from mcp.types import CallToolResult

#: The same budget as a command's output in the sandbox.
MAX_RESULT_CHARS = 30_000


def _cut_text_blocks(blocks: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], bool]:
    texts = [block for block in blocks if block.get("type") == "text"]
    total = sum(len(str(block.get("text", ""))) for block in texts)
    if total <= limit:
        return blocks, False
    joined, _ = cut_middle("\n".join(str(block.get("text", "")) for block in texts), limit)
    others = [block for block in blocks if block.get("type") != "text"]
    return [{"type": "text", "text": joined}, *others], True


def _json_length(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def to_observation(result: CallToolResult, limit: int = MAX_RESULT_CHARS) -> McpResult:
    blocks = [
        block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
    ]
    blocks, truncated = _cut_text_blocks(blocks, limit)
    structured = result.structured_content
    if structured is not None and _json_length(structured) > limit:
        structured, truncated = None, True
    return McpResult(
        content=blocks,
        structured_content=structured,
        is_error=bool(result.is_error),
        truncated=truncated,
    )
