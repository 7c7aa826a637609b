"""The gateway's refusals, in one exception that every protocol renders in its own shape.

An agent's SDK reads errors in its provider's shape (OpenAI: ``{"error": {"message", "type",
"code"}}``; Anthropic: ``{"type": "error", "error": {"type", "message"}}``) and decides from
the status whether to retry. So the core raises ``GatewayError`` with the status and a
protocol-neutral ``kind``; each protocol module maps the kind to its own words
(``openai_protocol.error_body``).
"""

from __future__ import annotations

from typing import Literal

from app.errors import ChronicleError

#: What went wrong, whatever the protocol: each protocol names it its own way.
ErrorKind = Literal[
    "invalid_request",  # 400: the body is not a request of the protocol
    "authentication",  # 401: no token, or one that does not work
    "permission",  # 403: the token may not write the session it names
    "model_not_found",  # 404: the deployment does not allow the model the agent names
    "not_found",  # 404: a session the token may not see
    "too_large",  # 413: the body is over gateway_max_body_bytes
    "rate_limited",  # 429
    "upstream",  # 502: the model failed for good (after the gateway's retries)
    "unavailable",  # 503: the model or the database is down for now
    "server",  # 500
]


class GatewayError(ChronicleError):
    """A refusal the gateway answers with ``status``; ``message`` says what to do."""

    def __init__(
        self,
        status: int,
        kind: ErrorKind,
        message: str,
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        #: a machine-readable code (OpenAI's ``code``: ``model_not_found``, ...)
        self.code = code
        self.headers = headers or {}


def invalid_request(message: str, *, code: str | None = None) -> GatewayError:
    return GatewayError(400, "invalid_request", message, code=code)
