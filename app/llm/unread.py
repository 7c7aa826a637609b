"""The reply litellm received but could not turn into its response object.

litellm builds its ``ModelResponse`` from the parsed JSON a server sent, and gives up on the
whole reply when one field does not fit its model: a usage count of ``1e999`` or ``"abc"``
makes a usable answer "Invalid response object" (an exception with a made-up status 500),
and the call, paid for, looked like a server that sends no chat completion. The JSON it was
converting is still in the traceback of that exception, as the argument of litellm's
conversion function; ``app.llm.reply`` reads it field by field as it reads any reply, and
the counts it cannot read are recorded as unknown.

This depends on litellm's internals (the function's name and argument): a test drives a
real litellm against the fake model server with such replies, so an upgrade that moves them
fails there, not in a user's session.
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

from app.llm.errors import exception_chain

#: litellm's conversion of a provider's JSON into its response objects, and its argument.
_CONVERSION = "convert_to_model_response_object"
_ARGUMENT = "response_object"


#: pydantic's warning when litellm serializes its usage model holding what a server sent
#: (``inf``, ``"abc"``): the counts are recorded as unknown, the user needs no traceback-like
#: lines on the terminal for it. Only when every value it names is a token count.
_ODD_COUNTS_WARNING = (
    r"Pydantic serializer warnings:"
    r"(?:\s+PydanticSerializationUnexpectedValue\([^\n]*field_name='\w*tokens'[^\n]*\))+\s*\Z"
)


@cache  # once: each change of the filters empties the warnings' caches
def quiet_odd_count_warnings() -> None:
    """Leave out pydantic's warning about odd token counts inside litellm (see above)."""
    warnings.filterwarnings(
        "ignore", message=_ODD_COUNTS_WARNING, category=UserWarning, module=r"pydantic\.main"
    )


def unconverted_reply(exc: BaseException) -> dict[str, Any] | None:
    """The chat completion (parsed JSON) whose conversion raised ``exc`` or an exception of
    its chain, or None when ``exc`` did not come from converting one."""
    for link in exception_chain(exc):
        trace = link.__traceback__
        while trace is not None:
            frame = trace.tb_frame
            if frame.f_code.co_name == _CONVERSION:
                reply = frame.f_locals.get(_ARGUMENT)
                if isinstance(reply, dict) and "choices" in reply:
                    return reply
            trace = trace.tb_next
    return None
