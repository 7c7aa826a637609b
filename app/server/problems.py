"""Every error the API answers is an RFC 9457 problem document, never a stack trace.

One handler turns whatever a request raised into ``application/problem+json``: the API's own
refusals (``ApiProblem``), Litestar's HTTP errors (validation with the fields that failed, 401,
404, 405, 413, 429, with their headers), the store's errors (as the CLI reports them, with a
status that says whose move it is), and anything else as a 500 whose body says only an
error id: the details (the traceback) go to the server's log under that id.
"""

from __future__ import annotations

import logging
import uuid
from http import HTTPStatus
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from pydantic import BaseModel

from app.errors import ChronicleError
from app.events import InvalidEventError
from app.server.json_text import dumps
from app.store import (
    TRANSIENT_ERRORS,
    ConcurrencyError,
    DatabaseUnavailableError,
    DuplicateEventError,
    SessionBusyError,
    StoreError,
    refused_for_now,
)

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
#: Seconds a client waits before sending again what the database refused for now (its disk
#: full, out of memory or connections: ``app.store.transient``).
REFUSED_RETRY_AFTER = "10"


class Problem(BaseModel):
    """An RFC 9457 problem document (``type`` is left to its default, about:blank)."""

    title: str
    status: int
    detail: str = ""
    #: Validation errors: which field, and what is wrong with it.
    errors: list[dict[str, Any]] | None = None
    #: A 500's id, to find its details in the server's log.
    error_id: str | None = None


class ApiProblem(ChronicleError):
    """A refusal the API answers with ``status`` and a sentence saying what to do."""

    status = HTTPStatus.BAD_REQUEST

    def __init__(
        self,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.headers = headers or {}
        #: each thing wrong, for a form to show where it is (the problem's ``errors``)
        self.errors = errors


class NotFound(ApiProblem):
    status = HTTPStatus.NOT_FOUND


class Conflict(ApiProblem):
    status = HTTPStatus.CONFLICT


class Unprocessable(ApiProblem):
    status = HTTPStatus.UNPROCESSABLE_ENTITY


class TooManyActiveSessions(ApiProblem):
    status = HTTPStatus.TOO_MANY_REQUESTS


def problem_response(problem: Problem, headers: dict[str, str] | None = None) -> Response[bytes]:
    body = dumps(problem.model_dump(exclude_none=True))
    return Response(
        content=body, status_code=problem.status, media_type=PROBLEM_JSON, headers=headers
    )


def _titled(status: int, detail: str, **extra: Any) -> Problem:
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    return Problem(title=title, status=status, detail=detail, **extra)


def _validation_errors(exc: ValidationException) -> list[dict[str, Any]] | None:
    if not isinstance(exc.extra, list):
        return None
    errors: list[dict[str, Any]] = []
    for item in exc.extra:
        if isinstance(item, dict):
            errors.append({k: str(v) for k, v in item.items() if k in ("key", "message", "source")})
    return errors or None


def problem_for(exc: BaseException) -> tuple[Problem, dict[str, str]]:
    """The problem document (and headers) that answers ``exc``; logs what a user must not see."""
    if isinstance(exc, ApiProblem):
        return _titled(exc.status, exc.detail, errors=exc.errors), exc.headers
    if isinstance(exc, HTTPException):
        headers = dict(exc.headers or {})
        if isinstance(exc, ValidationException):
            return _titled(exc.status_code, exc.detail, errors=_validation_errors(exc)), headers
        return _titled(exc.status_code, exc.detail), headers
    refusal = refused_for_now(exc)
    if refusal is not None:  # PostgreSQL's message names its files: the log's, not the user's
        log.warning("the database refused for now: %s", refusal.server_message or refusal)
        return _titled(503, str(refusal)), {"Retry-After": REFUSED_RETRY_AFTER}
    if isinstance(exc, (DatabaseUnavailableError, *TRANSIENT_ERRORS)):
        log.warning("the database is unavailable: %s", exc)
        return _titled(503, "the database is unavailable; retry in a moment"), {"Retry-After": "5"}
    if isinstance(exc, SessionBusyError | ConcurrencyError | DuplicateEventError):
        return _titled(409, str(exc)), {}
    if isinstance(exc, InvalidEventError):
        return _titled(422, str(exc)), {}
    if isinstance(exc, StoreError):
        return _titled(400, str(exc)), {}
    error_id = uuid.uuid4().hex
    log.error("internal error %s", error_id, exc_info=exc)
    detail = f"an internal error occurred; the server's log has its details under {error_id}"
    return _titled(500, detail, error_id=error_id), {}


def handle_exception(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """Litestar's exception handler for every exception (registered for ``Exception``)."""
    problem, headers = problem_for(exc)
    return problem_response(problem, headers)


def problem_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """The OpenAPI ``responses`` of a route: each status it may answer with a problem
    document (the statuses every protected route may give are always included)."""
    every = {400, 401, 403, 413, 429, 500, 503}
    return {
        status: ResponseSpec(
            data_container=Problem,
            media_type=PROBLEM_JSON,
            description=HTTPStatus(status).phrase,
            generate_examples=False,
        )
        for status in sorted(every | set(statuses))
    }
