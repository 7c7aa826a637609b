"""Model errors in words a user can act on."""

from __future__ import annotations

from typing import Literal

FailureKind = Literal[
    "auth",
    "quota",
    "not_found",
    "context_window",
    "bad_request",
    "rate_limited",
    "unavailable",
    "not_configured",
    "bad_response",  # the server answered, but nothing in the reply can be used
]


class LlmError(Exception):
    """A model call that failed for good; ``kind`` says which way, the message what to do."""

    def __init__(self, kind: FailureKind, message: str, *, attempts: int = 1) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.attempts = attempts


class LlmNotConfiguredError(LlmError):
    def __init__(self) -> None:
        super().__init__(
            "not_configured",
            "no model is configured. Set CHRONICLE_LLM_MODEL (for example openai/gpt-4o-mini) "
            "and CHRONICLE_LLM_API_KEY, or pass --model and --api-key. For a local or company "
            "model behind an OpenAI-compatible endpoint, also set CHRONICLE_LLM_BASE_URL "
            "(e.g. http://localhost:8000/v1) and name the model openai/<name>.",
        )
