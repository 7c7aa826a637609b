"""A request's free text (a task, a message, a prompt) with its length bounds, lone surrogates
allowed.

JSON may carry a lone surrogate (``\\udce9``: a file name that is not UTF-8, pasted), the
request reads it (``json_text``) and the log keeps it. pydantic's own ``min_length`` and
``max_length`` refuse such a string ("unable to parse raw data as a unicode string"), so these
fields count their characters here, and say their bounds to the OpenAPI document (Litestar
writes it from the field's ``json_schema_extra``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field, GetCoreSchemaHandler, JsonValue
from pydantic_core import core_schema


@dataclass(frozen=True)
class TextLength:
    """``task: Annotated[str, TASK] = TASK.field(description=...)`` with ``TASK =
    TextLength(1, 100_000)``: a string of that many characters."""

    min_length: int
    max_length: int

    def _checked(self, value: str) -> str:
        if len(value) < self.min_length:
            raise ValueError(f"should have at least {self.min_length} character(s)")
        if len(value) > self.max_length:
            raise ValueError(f"should have at most {self.max_length} characters")
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._checked, handler(source))

    def field(self, **kwargs: Any) -> Any:
        """The field's ``Field``, its bounds in the OpenAPI document."""
        bounds: dict[str, JsonValue] = {"minLength": self.min_length, "maxLength": self.max_length}
        return Field(json_schema_extra=bounds, **kwargs)


#: A task or a message to the agent.
MESSAGE_TEXT = TextLength(1, 100_000)
#: A system prompt that replaces the agent's.
PROMPT_TEXT = TextLength(1, 200_000)
