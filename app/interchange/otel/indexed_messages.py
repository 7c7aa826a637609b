"""Message contents as OpenLLMetry (Traceloop) and instrumentations of its generation record
them: one attribute per field of each message, by index (``gen_ai.prompt.0.role``,
``gen_ai.prompt.0.content``, ``gen_ai.completion.0.tool_calls.1.arguments``), from before the
conventions' ``gen_ai.input.messages`` / ``gen_ai.output.messages``.

Read into the conventions' shape (role and parts), so such a span's prompt and reply become
an ``llm.call``'s as the current attributes' do. Pure; bounded by the span's attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The prefixes of the indexed input and output messages.
PROMPT = "gen_ai.prompt"
COMPLETION = "gen_ai.completion"


def indexed_messages(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    """The messages under ``prefix`` (``PROMPT`` or ``COMPLETION``) in index order, in the
    conventions' shape; None when the span has none."""
    lead = prefix + "."
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(lead):
            continue
        index, _, field = key[len(lead) :].partition(".")
        if index.isdigit() and field:
            found.setdefault(int(index), {})[field] = value
    if not found:
        return None
    return [_message(found[index]) for index in sorted(found)]


def _message(fields: Mapping[str, Any]) -> dict[str, Any]:
    role = fields.get("role")
    role = role if isinstance(role, str) and role else "user"
    content = fields.get("content")
    parts: list[dict[str, Any]] = []
    if content is not None and content != "":
        parts.append({"type": "text", "content": content})
    calls: dict[int, dict[str, Any]] = {}
    for field, value in fields.items():
        if field.startswith("tool_calls."):
            at, _, name = field[len("tool_calls.") :].partition(".")
            if at.isdigit() and name:
                calls.setdefault(int(at), {})[name] = value
    for number in sorted(calls):
        call = calls[number]
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": call.get("name"),
                "arguments": call.get("arguments"),
            }
        )
    if role == "tool":
        parts = [{"type": "tool_call_response", "id": fields.get("tool_call_id"),
                  "response": content}]  # fmt: skip
    message: dict[str, Any] = {"role": role, "parts": parts}
    if fields.get("finish_reason") is not None:
        message["finish_reason"] = fields["finish_reason"]
    return message
