"""Which failures are worth another attempt, and how long to wait before it."""

from __future__ import annotations

import email.utils
import random
import time
from typing import Any, NamedTuple

from app.llm.errors import FailureKind


class Failure(NamedTuple):
    kind: FailureKind
    retryable: bool
    retry_after: float | None
    message: str


def _retry_after(exc: BaseException) -> float | None:
    headers: Any = getattr(exc, "headers", None) or {}
    response = getattr(exc, "response", None)
    if not headers and response is not None:
        headers = getattr(response, "headers", {}) or {}
    value = None
    for name in ("retry-after-ms", "Retry-After-Ms", "retry-after", "Retry-After"):
        if name in headers:
            value = (name, headers[name])
            break
    if value is None:
        return None
    name, raw = value
    try:
        seconds = float(raw)
        return seconds / 1000 if name.lower().endswith("-ms") else seconds
    except (TypeError, ValueError):
        parsed = email.utils.parsedate_to_datetime(str(raw)) if raw else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def classify(exc: BaseException) -> Failure:
    """Sort a litellm (OpenAI-style) exception: retry 429/5xx/connection/timeouts only."""
    import litellm

    text = str(getattr(exc, "message", "") or exc)
    status = getattr(exc, "status_code", None)
    lowered = text.lower()
    if isinstance(exc, litellm.ContextWindowExceededError):
        return Failure(
            "context_window",
            False,
            None,
            "the conversation is longer than the model's context window",
        )
    if isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError) or status in (
        401,
        403,
    ):
        return Failure(
            "auth", False, None,
            "the model provider refused the credentials: check CHRONICLE_LLM_API_KEY "
            f"(or --api-key) and the base URL ({text})",
        )  # fmt: skip
    if "insufficient_quota" in lowered or ("quota" in lowered and status == 429) or status == 402:
        return Failure(
            "quota", False, None,
            f"the model provider says the account is out of quota or credit ({text})",
        )  # fmt: skip
    if isinstance(exc, litellm.NotFoundError) or status == 404:
        return Failure(
            "not_found", False, None,
            "the model was not found: check CHRONICLE_LLM_MODEL (or --model) and the base "
            f"URL ({text})",
        )  # fmt: skip
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return Failure("rate_limited", True, _retry_after(exc), f"rate limited ({text})")
    if isinstance(
        exc, litellm.Timeout | litellm.APIConnectionError | TimeoutError | ConnectionError
    ):
        return Failure("unavailable", True, None, f"the model did not answer ({text})")
    if (isinstance(status, int) and status >= 500) or isinstance(
        exc,
        litellm.InternalServerError | litellm.ServiceUnavailableError | litellm.BadGatewayError,
    ):
        return Failure("unavailable", True, _retry_after(exc), f"the model server failed ({text})")
    if isinstance(exc, litellm.BadRequestError) or status == 400:
        return Failure("bad_request", False, None, f"the model refused the request ({text})")
    return Failure("unavailable", False, None, f"{type(exc).__name__}: {text}")


def backoff(attempt: int, minimum: float, maximum: float) -> float:
    """Exponential backoff with full jitter, capped: attempt 1 waits up to 2 x minimum."""
    ceiling = min(maximum, minimum * (2**attempt))
    return random.uniform(minimum, max(minimum, ceiling))
