"""Images in prompts: kept for models that take them, a note for those that don't."""

from __future__ import annotations

from app.llm.images import vision_by_default, without_images

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def test_image_parts_become_a_note_and_text_stays() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "look"}, IMAGE, IMAGE]}
    stripped = without_images(message, "openai/gpt-3.5-turbo")
    assert stripped["content"][0] == {"type": "text", "text": "look"}
    notes = [part["text"] for part in stripped["content"][1:]]
    assert len(notes) == 2 and all("gpt-3.5-turbo does not take images" in n for n in notes)
    assert "image_url" not in str(stripped)
    assert message["content"][1] is IMAGE  # the original is left as it was


def test_messages_without_images_are_the_same_object() -> None:
    plain = {"role": "tool", "content": "ok", "tool_call_id": "c1"}
    parts = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert without_images(plain, "m") is plain
    assert without_images(parts, "m") is parts


def test_vision_by_default_follows_the_model_map() -> None:
    assert vision_by_default(None)  # a model the map does not know: send them
    assert vision_by_default({"supports_vision": True})
    assert not vision_by_default({"supports_vision": False})
    assert not vision_by_default({"supports_vision": None})  # known, not marked as taking them
