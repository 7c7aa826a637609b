"""Images in prompts: sent to models that take them, replaced by a note for those that don't.

An MCP tool may return an image; the agent's history turns it into an OpenAI ``image_url``
part. A text-only model answers such a request with an error, which would end the session,
so for a model known not to take images the part becomes a line of text saying an image was
left out. Whether a model takes images: the ``vision`` setting, else litellm's model map (which
marks the models that do); a model the map does not know (a local model behind a base URL) is
sent images, as it is sent tools.
"""

from __future__ import annotations

from typing import Any

OMITTED = "[an image was left out: {model} does not take images (set llm_vision to send them)]"


def has_images(message: dict[str, Any]) -> bool:
    """Whether ``message`` holds an ``image_url`` part."""
    content = message.get("content")
    return isinstance(content, list) and any(_is_image(part) for part in content)


def without_images(message: dict[str, Any], model: str) -> dict[str, Any]:
    """``message`` with every ``image_url`` part replaced by a note (the same object if none)."""
    if not has_images(message):
        return message
    content = message["content"]
    note = {"type": "text", "text": OMITTED.format(model=model)}
    return {**message, "content": [note if _is_image(part) else part for part in content]}


def _is_image(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "image_url"


def vision_by_default(model_info: dict[str, Any] | None) -> bool:
    """A model litellm's map knows takes images when the map says so (it marks the ones that
    do); one it does not know (``None``) is sent them."""
    return model_info is None or bool(model_info.get("supports_vision"))
