"""A streamed model call: each chunk handed on as it arrives, the whole reply assembled after.

An agent that streams must see its first token when the model sends it, not when the reply
is complete; the log must still hold the whole reply, read exactly as a non-streamed one is
(``app.llm.reply``). So the chunks go to ``on_chunk`` one by one and are kept, and once the
stream ends they are assembled (litellm's ``stream_chunk_builder``) into the chat completion
they add up to, which the gateway reads, prices and records as any other.

The upstream is asked for its usage (``stream_options.include_usage``): without it the usage
of a streamed call would be litellm's estimate, not what the provider counted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

#: Hears each chunk of a streamed call as it arrives (litellm's ``ModelResponseStream``).
OnChunk = Callable[[Any], Awaitable[None]]


async def relayed(stream: Any, chunks: list[Any], on_chunk: OnChunk) -> None:
    """Hand each chunk of ``stream`` to ``on_chunk`` and keep it in ``chunks``; the upstream
    stream is closed however this ends (a client gone mid-stream stops the model's reply)."""
    try:
        async for chunk in stream:
            chunks.append(chunk)
            await on_chunk(chunk)
    finally:
        closing = getattr(stream, "aclose", None)
        if closing is not None:
            with contextlib.suppress(Exception):
                await closing()


def sent_usage(chunks: list[Any]) -> bool:
    """Whether any chunk carried the provider's usage."""
    return any(getattr(chunk, "usage", None) for chunk in chunks)


def assembled(chunks: list[Any]) -> Any:
    """The chat completion the chunks add up to (a dict without choices when there are none,
    which ``read_reply`` reports as a reply with no choices)."""
    if not chunks:
        return {"choices": []}
    import litellm  # loaded already: the chunks came from it

    response = litellm.stream_chunk_builder(chunks)
    return response if response is not None else {"choices": []}
