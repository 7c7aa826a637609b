"""Anthropic's Messages request, as typed models: what ``POST /v1/messages`` takes.

The models hold Anthropic's own limits (``max_tokens`` required, ``temperature`` in 0..1,
the block types each turn may hold), so a request that Anthropic's API would refuse is
refused here with the field that is wrong, in its words. Newer optional fields of a block or
of the request are accepted (an agent's SDK sends them); which of them go on to the model is
``anthropic_protocol``'s business.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from app.external.errors import invalid_request

#: Tool types that are ordinary client tools (name, description, input_schema).
_CLIENT_TOOL_TYPES = (None, "custom")


class _Part(BaseModel):
    """A content block: newer optional fields (``citations``, ...) are accepted."""

    model_config = ConfigDict(extra="allow")

    cache_control: dict[str, Any] | None = None


class TextBlock(_Part):
    type: Literal["text"]
    text: str


class Base64Source(BaseModel):
    type: Literal["base64"]
    media_type: str
    data: str


class UrlSource(BaseModel):
    type: Literal["url"]
    url: str


class PlainTextSource(BaseModel):
    type: Literal["text"]
    media_type: str = "text/plain"
    data: str


class ImageBlock(_Part):
    type: Literal["image"]
    source: Annotated[Base64Source | UrlSource, Field(discriminator="type")]


class DocumentBlock(_Part):
    type: Literal["document"]
    source: Annotated[Base64Source | UrlSource | PlainTextSource, Field(discriminator="type")]
    title: str | None = None


class ToolUseBlock(_Part):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


ToolResultPart = Annotated[TextBlock | ImageBlock | DocumentBlock, Field(discriminator="type")]


class ToolResultBlock(_Part):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[ToolResultPart] = ""
    is_error: bool = False


class ThinkingBlock(_Part):
    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(_Part):
    type: Literal["redacted_thinking"]
    data: str


ContentBlock = Annotated[
    TextBlock
    | ImageBlock
    | DocumentBlock
    | ToolUseBlock
    | ToolResultBlock
    | ThinkingBlock
    | RedactedThinkingBlock,
    Field(discriminator="type"),
]


class MessageParam(BaseModel):
    role: Literal["user", "assistant", "system"]
    content: str | list[ContentBlock]


class ToolParam(BaseModel):
    """A client tool. Anthropic's server tools (``web_search_...``, ``bash_...``) run on
    Anthropic's side and have no chat-completions form: refused by name."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    description: str | None = None
    input_schema: dict[str, Any]
    cache_control: dict[str, Any] | None = None
    type: Literal["custom"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _client_tool(cls, value: Any) -> Any:
        if isinstance(value, dict) and value.get("type") not in _CLIENT_TOOL_TYPES:
            raise ValueError(
                f"the tool type {value.get('type')!r} is one of Anthropic's server tools, "
                "which only Anthropic's own API runs; this gateway sends client tools "
                "(name, description, input_schema)"
            )
        return value


class ToolChoiceAuto(BaseModel):
    type: Literal["auto"]
    disable_parallel_tool_use: bool = False


class ToolChoiceAny(BaseModel):
    type: Literal["any"]
    disable_parallel_tool_use: bool = False


class ToolChoiceTool(BaseModel):
    type: Literal["tool"]
    name: str
    disable_parallel_tool_use: bool = False


class ToolChoiceNone(BaseModel):
    type: Literal["none"]


ToolChoice = Annotated[
    ToolChoiceAuto | ToolChoiceAny | ToolChoiceTool | ToolChoiceNone, Field(discriminator="type")
]


class Metadata(BaseModel):
    model_config = ConfigDict(extra="allow")

    user_id: str | None = None


class ThinkingConfig(BaseModel):
    """Passed on as litellm's ``thinking`` (which Anthropic's models read)."""

    model_config = ConfigDict(extra="allow")

    type: Literal["enabled", "disabled", "adaptive", "between_tools"]
    budget_tokens: int | None = Field(default=None, ge=0)


class MessagesRequest(BaseModel):
    """The body of ``POST /v1/messages``. Fields only Anthropic's service reads are accepted
    (an agent's SDK sends them) and not sent on."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    max_tokens: int = Field(ge=0)
    messages: list[MessageParam] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    tools: list[ToolParam] | None = None
    tool_choice: ToolChoice | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = Field(default=None, ge=0, le=1)
    top_p: float | None = Field(default=None, ge=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    metadata: Metadata | None = None
    stream: bool = False
    thinking: ThinkingConfig | None = None


class CountTokensRequest(MessagesRequest):
    """The body of ``POST /v1/messages/count_tokens``: a request without ``max_tokens``."""

    max_tokens: int = Field(default=1, ge=0)


def parse_request(body: Any, model: type[MessagesRequest] = MessagesRequest) -> MessagesRequest:
    """The request, or ``GatewayError`` 400 saying which field is wrong, as Anthropic's API
    words it (``messages.0.content.1.type: ...``)."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise invalid_request(validation_message(exc, body)) from None


_SCALAR_BRANCHES = frozenset({"str", "int", "float", "bool", "none"})


def _branch(part: str | int) -> bool:
    """Whether a location part names a branch of a union (``str``, ``list[...]``,
    ``TextBlock``), not a field or an index."""
    return isinstance(part, str) and (part in _SCALAR_BRANCHES or "[" in part or part[:1].isupper())


def _location(loc: tuple[str | int, ...], body: Any) -> list[str | int]:
    """A location in the request's terms: without the union branches pydantic tried, nor
    the tag (a block's ``type``) that chose one, found by walking ``body`` along it."""
    kept: list[str | int] = []
    node = body
    tagged = False  # the node's tag was passed already
    for part in loc:
        if not tagged and isinstance(node, dict) and node.get("type") == part:
            tagged = True
            continue  # the tag of a tagged union
        if _branch(part):
            continue
        kept.append(part)
        tagged = False
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            node = None
    return kept


def validation_message(exc: ValidationError, body: Any = None) -> str:
    """The problems of a validation error, one each, where then what, in a request's terms
    (``messages.0.content.1: ...``): the union branches pydantic tried are left out, and so
    is the complaint of a plain-text branch when a list was sent."""
    errors = exc.errors(include_url=False)
    if len(errors) > 1:  # "content.str: Input should be a valid string" is noise then
        errors = [e for e in errors if "str" not in e["loc"]] or errors
    lines: list[str] = []
    for error in errors:
        where = ".".join(str(part) for part in _location(error["loc"], body))
        line = f"{where}: {error['msg']}" if where else str(error["msg"])
        if line not in lines:
            lines.append(line)
    shown = lines[:5]
    if len(lines) > len(shown):
        shown.append(f"(and {len(lines) - len(shown)} more)")
    return "; ".join(shown)
