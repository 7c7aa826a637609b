"""litellm's own logging of each call, which Chronicle never reads, kept from copying prompts.

After every call litellm builds a logging payload for its callbacks (none are registered: the
``llm.call`` event is Chronicle's record). Part of it is a copy of the whole prompt, every
string walked for base64 images to shorten, so each call of a long conversation cost time in
proportion to the conversation (a third of the gateway's CPU per call in a 300-call one).
With the limit at 0 litellm hands the messages on as they are, uncopied. Nothing sent to the
model or recorded changes: only what litellm's unused logging payload would hold.
"""

from __future__ import annotations

from functools import cache


@cache
def without_prompt_copies() -> None:
    """Turn the copy off (litellm reads the limit from its logging module's globals)."""
    from litellm.litellm_core_utils import logging_utils

    logging_utils.MAX_BASE64_LENGTH_FOR_LOGGING = 0  # type: ignore[misc]
