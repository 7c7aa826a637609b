"""Model errors in words a user can act on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from app.errors import ChronicleError

FailureKind = Literal[
    "auth",
    "quota",
    "not_found",
    "context_window",
    "bad_request",
    "rate_limited",
    "unavailable",
    "not_configured",
    "no_provider",  # litellm knows no provider for the model's name
    "unreachable",  # nothing answers at the model's address (refused, unknown host)
    "bad_response",  # the server answered, but nothing in the reply can be used
]

#: Failures of the configuration, not of one call: every later call made with it fails the
#: same way (a key refused or missing, a model or provider unknown, an address where nothing
#: listens, an account out of credit). An evaluation run stops at the first trial that shows
#: one instead of running every trial into it.
CONFIGURATION_KINDS: frozenset[str] = frozenset(
    {"auth", "quota", "not_found", "not_configured", "no_provider", "unreachable"}
)


def is_configuration_error(kind: str | None) -> bool:
    """Whether a failure of this kind is the configuration's (see ``CONFIGURATION_KINDS``)."""
    return kind in CONFIGURATION_KINDS


class LlmError(ChronicleError):
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


def no_provider_message(model: str) -> str:
    return (
        f"no model provider is known for the model name {model!r}: name it as "
        "provider/model (e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-5), or "
        "openai/<name> for a model behind an OpenAI-compatible CHRONICLE_LLM_BASE_URL"
    )


def model_name_problem(model: str) -> str | None:
    """Why litellm could call no provider for ``model`` (None: it knows one), checked before
    a session or a run is recorded so a bad name is refused at once. Imports litellm (slow
    the first time): call it off the event loop."""
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price fetch at import
    import litellm

    litellm.suppress_debug_info = True
    try:
        litellm.get_llm_provider(model)
    except Exception:  # litellm's BadRequestError, or a name it cannot even split
        return no_provider_message(model)
    return None


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what caused it, link by link (``__cause__``, else ``__context__``): litellm
    wraps the exception that says what happened, sometimes more than once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
