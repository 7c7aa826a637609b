"""litellm's logging of a call (which nothing reads) does not copy the call's whole prompt."""

from __future__ import annotations

import asyncio

from app.llm.gateway import preload_client


def test_litellm_hands_its_logging_the_prompt_uncopied() -> None:
    preload_client()
    from litellm.litellm_core_utils import logging_utils

    prompt = [{"role": "user", "content": "step " * 20_000}, {"role": "assistant", "content": "ok"}]
    assert logging_utils.truncate_base64_in_messages(prompt) is prompt
    assert asyncio.run(logging_utils.truncate_base64_in_messages_async(prompt)) is prompt
