"""An llm.call's whole prompt, from the calls of its session's log.

A call records its prompt as the messages it keeps of the previous call's (``prompt_kept``)
and the hashes of the ones after them (``prompt``); a call without ``prompt_kept`` (recorded
before there was one, or the first of a run) lists the whole prompt.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from app.errors import ChronicleError


class PromptChainError(ChronicleError, ValueError):
    """A call keeps messages of a previous call the log does not have."""


def whole_prompt(payload: Mapping[str, Any], previous: list[str] | None) -> list[str]:
    """The whole prompt of the call with ``payload``, given the previous call's whole prompt
    (None: there is no previous call)."""
    prompt = list(payload.get("prompt") or [])
    kept = payload.get("prompt_kept")
    if kept is None:
        return prompt
    if previous is None or kept > len(previous):
        raise PromptChainError(
            f"this llm.call keeps {kept} messages of the previous call's prompt, which has "
            f"{'none' if previous is None else len(previous)}"
        )
    return [*previous[:kept], *prompt]


def whole_prompts(calls: Iterable[Mapping[str, Any]]) -> Iterator[list[str]]:
    """The whole prompt of each call, given the payloads of all of a session's llm.calls in
    log order."""
    previous: list[str] | None = None
    for payload in calls:
        previous = whole_prompt(payload, previous)
        yield previous
