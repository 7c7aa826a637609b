"""How many tokens a prompt holds, counted locally by litellm's tokenizer for the model.

Anthropic's protocol has ``POST /v1/messages/count_tokens``, which agents (Claude Code) ask
before a call to see how full the context is. The gateway answers it without calling the
model, so nothing is paid or recorded: an estimate for the upstream model (exact for OpenAI's,
close for others), which is what such an agent uses it for.
"""

from __future__ import annotations

import os
from typing import Any


def prompt_tokens(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """The prompt's token count for ``model`` (litellm's name). Imports litellm (seconds the
    first time) and tokenizes the whole prompt: call it in a thread. An image counts as a
    fixed number of tokens (nothing is fetched)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price fetch at import
    import litellm

    return int(
        litellm.token_counter(
            model=model,
            messages=messages,
            tools=tools or None,  # type: ignore[arg-type]
            use_default_image_token_count=True,
        )
    )
