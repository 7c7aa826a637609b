"""MCP tool results as mcp.result observations: blocks as MCP writes them, text cut like
command output, structuredContent kept when it fits."""

from __future__ import annotations

from mcp.types import CallToolResult, ImageContent, TextContent

from app.tools.mcp_results import to_observation


def test_blocks_keep_their_mcp_names_and_structured_content() -> None:
    result = CallToolResult(
        content=[ImageContent(data="AAAA", mime_type="image/png"), TextContent(text="hi")],
        structured_content={"answer": 42},
    )
    observation = to_observation(result)
    assert observation.content == [
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "text", "text": "hi"},
    ]
    assert observation.structured_content == {"answer": 42}
    assert not observation.truncated and not observation.is_error


def test_long_text_is_one_block_of_head_and_tail_with_the_images_kept() -> None:
    result = CallToolResult(
        content=[
            TextContent(text="a" * 600),
            ImageContent(data="AAAA", mime_type="image/png"),
            TextContent(text="b" * 600),
        ],
        is_error=True,
    )
    observation = to_observation(result, limit=1000)
    text, image = observation.content
    assert text["text"] == "a" * 500 + "\n[... 201 characters truncated ...]\n" + "b" * 500
    assert image["type"] == "image"
    assert observation.truncated and observation.is_error


def test_structured_content_too_large_for_the_budget_is_dropped() -> None:
    result = CallToolResult(
        content=[TextContent(text="summary")], structured_content={"rows": ["x" * 50] * 40}
    )
    observation = to_observation(result, limit=1000)
    assert observation.structured_content is None and observation.truncated
    assert observation.content == [{"type": "text", "text": "summary"}]
