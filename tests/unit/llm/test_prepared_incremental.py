"""The gateway's append-only request lists equal the lists prepared from scratch.

``LlmGateway.prepare`` extends the last request's lists in place when a prompt goes on from
it, and the agent's ``Conversation`` hands it the same list each step, changed in place (its
tail replaced). Over conversations that grow, have their last messages replaced, are
condensed and start over, every request must be the one a fresh gateway prepares from a
copy of the same messages (fingerprint, hashes, masked and wire forms, ``prompt_kept``), and
a request already made must not change when a later one extends the lists it shares. A
gateway that trusted a same-length prefix without comparing it (the in-place replaced tail),
or that read a shared list past a request's ``size``, fails here.
"""

from __future__ import annotations

import random
from typing import Any

from app.llm import LlmConfig, LlmGateway
from app.llm.gateway import PreparedRequest

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {}}}]


class _NoStore:
    masker = None


def _gateway() -> LlmGateway:
    return LlmGateway(_NoStore(), LlmConfig(model="m", native_tool_calling=True))  # type: ignore[arg-type]


def _payload(request: PreparedRequest) -> dict[str, Any]:
    """The llm.call payload fields the gateway compares with its last request."""
    return {
        "fingerprint": request.fingerprint,
        "prompt_kept": request.kept,
        "prompt": request.recorded_prompt(),
    }


def _snapshot(request: PreparedRequest) -> tuple[Any, ...]:
    size = request.size
    return (
        request.fingerprint,
        request.kept,
        request.recorded_prompt(),
        list(request.prompt[:size]),
        list(request.messages[:size]),
        request.sent(),
    )


def _common_prefix(a: list[str], b: list[str]) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def _steps(seed: int) -> list[str]:
    moves = ["grow"] * 6 + ["replace_tail"] * 2 + ["condense", "restart"]
    rng = random.Random(seed)
    return [rng.choice(moves) for _ in range(60)]


def test_incremental_requests_equal_requests_prepared_from_scratch() -> None:
    for seed in range(8):
        rng = random.Random(seed)
        gateway = _gateway()
        shown: list[dict[str, Any]] = [{"role": "system", "content": "s"}]  # changed in place
        made: list[tuple[PreparedRequest, tuple[Any, ...]]] = []
        last: PreparedRequest | None = None
        counter = 0
        for move in _steps(seed):
            counter += 1
            if move == "grow":
                shown += [
                    {"role": "user", "content": f"u{counter}-{i}"} for i in range(rng.randint(1, 3))
                ]
            elif move == "replace_tail" and len(shown) > 1:  # as Conversation replaces its tail
                shown[-1] = {"role": "assistant", "content": f"a{counter}"}
                shown.append({"role": "tool", "content": f"t{counter}"})
            elif move == "condense" and len(shown) > 3:  # the system message, a note, the rest
                keep = shown[len(shown) // 2 :]
                del shown[1:]
                shown += [{"role": "user", "content": f"note{counter}"}, *keep]
            elif move == "restart":  # another conversation altogether
                shown[:] = [{"role": "system", "content": f"s{counter}"}]
            previous = _payload(last) if last is not None and rng.random() < 0.8 else None
            request = gateway.prepare(shown, TOOLS, previous)
            fresh = _gateway().prepare(list(shown), TOOLS)
            size = request.size
            assert size == len(shown)
            assert request.fingerprint == fresh.fingerprint
            assert request.prompt[:size] == fresh.prompt
            assert request.messages[:size] == fresh.messages
            assert request.sent() == fresh.wire
            assert request.tools_hash == fresh.tools_hash
            expected = None
            if previous is not None and last is not None:
                expected = _common_prefix(list(last.prompt[: last.size]), fresh.prompt)
            assert request.kept == expected, (seed, move)
            assert request.recorded_prompt() == fresh.prompt[expected or 0 :]
            made.append((request, _snapshot(request)))
            last = request
        for earlier, snapshot in made:  # later requests extended, never changed, their lists
            assert _snapshot(earlier) == snapshot
