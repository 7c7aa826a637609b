"""Which failures are worth another attempt, and how long to wait before it.

A reply the server sent with a success status that litellm cannot read (an HTML page, an empty
body, JSON that is not a chat completion) is ``bad_response`` and is not retried: it nearly
always means the base URL is not the API's (a web UI, a proxy's login page), which another
attempt will not change, and a reply that was read may already have been paid for. The
session's next step calls again anyway, with the model told, bounded by stuck detection.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import time
from typing import Any, NamedTuple

from app.llm.errors import FailureKind, exception_chain, no_provider_message


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


#: litellm's words for a 2xx reply it could not turn into a chat completion.
_RECEIVED = re.compile(
    r"Empty or invalid response from LLM endpoint\. Received: (.*?)\. Check the", re.S
)
_UNREADABLE = ("Invalid response object", "provider returned a response with no 'choices'",
               "provider returned 'choices' that is not a list")  # fmt: skip


def _excerpt(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def unreadable_reply(exc: BaseException) -> str | None:
    """What was wrong with a reply that came with a success status but could not be read,
    or None when ``exc`` is anything else (a real HTTP error keeps its status).

    litellm reports such a reply as an ``InternalServerError`` with a made-up status 500;
    a real 5xx has the ``httpx.HTTPStatusError`` of the actual response in its chain.
    """
    import httpx
    import litellm

    if not isinstance(exc, litellm.InternalServerError | litellm.APIError):
        return None
    chain = list(exception_chain(exc))
    if any(isinstance(link, httpx.HTTPStatusError) for link in chain):
        return None
    text = str(getattr(exc, "message", "") or exc)
    received = _RECEIVED.search(text)
    if received:
        shown = received.group(1)
        kind = "not JSON" if shown[:1] in ("'", '"') else "JSON, but not a chat completion"
        return f"the reply was {kind} (it starts: {_excerpt(shown)})"
    decode = next((link for link in chain if isinstance(link, json.JSONDecodeError)), None)
    if decode is not None:
        start = _excerpt(decode.doc) if decode.doc.strip() else "an empty body"
        return f"the reply was not JSON ({decode.msg}; it starts: {start})"
    if any(words in text for words in _UNREADABLE):
        return "the reply was JSON, but not a chat completion (no usable choices or message)"
    return None


#: How a user gives the model's key, for a missing or refused one.
GIVE_A_KEY = (
    "set CHRONICLE_LLM_API_KEY, pass --api-key-file FILE, or put llm_api_key_file (or "
    "llm_api_key) in the settings file; a server that needs no key accepts any value"
)


def _missing_key(lowered: str) -> bool:
    """The provider's SDK would not send a request without a key (OpenAI's says "Missing
    credentials", which litellm reports as a server error, status 500)."""
    return "missing credentials" in lowered or (
        "missing" in lowered and ("api key" in lowered or "api_key" in lowered)
    )


#: litellm's words for a model name it knows no provider for (raised before any request).
_NO_PROVIDER = re.compile(r"LLM Provider NOT provided.*?You passed model=(\S+)", re.S)


def _unreachable(exc: BaseException) -> bool:
    """Nothing answers at the address: the connection was refused or its host is unknown
    (litellm reports either as a server error with no response)."""
    import socket

    return any(
        isinstance(link, ConnectionRefusedError | socket.gaierror) for link in exception_chain(exc)
    )


def classify(exc: BaseException, *, endpoint: str | None = None) -> Failure:
    """Sort a litellm (OpenAI-style) exception: retry 429/5xx/connection/timeouts only.

    ``endpoint`` (the base URL called) is named in the message of an unreadable reply.
    """
    import litellm

    text = str(getattr(exc, "message", "") or exc)
    status = getattr(exc, "status_code", None)
    lowered = text.lower()
    if _missing_key(lowered):
        return Failure("auth", False, None, f"no API key for the model: {GIVE_A_KEY} ({text})")
    no_provider = _NO_PROVIDER.search(text)
    if no_provider is not None:
        return Failure("no_provider", False, None, no_provider_message(no_provider.group(1)))
    if _unreachable(exc):
        where = endpoint or "the model provider's address"
        return Failure(
            "unreachable", True, None,
            f"nothing answers at {where}: check CHRONICLE_LLM_BASE_URL (or --base-url) and "
            f"that the model server runs ({text})",
        )  # fmt: skip
    unreadable = unreadable_reply(exc)
    if unreadable is not None:
        where = endpoint or "the model provider's address"
        return Failure(
            "bad_response", False, None,
            f"the model server at {where} answered, but {unreadable}; check that "
            "CHRONICLE_LLM_BASE_URL is the API's address (for an OpenAI-compatible server it "
            "usually ends in /v1)",
        )  # fmt: skip
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
            "the model provider refused the credentials: check the key and the base URL; "
            f"to give a key, {GIVE_A_KEY} ({text})",
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
