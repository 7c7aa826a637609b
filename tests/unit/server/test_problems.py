"""Every error becomes a problem document; a 500 says an id and nothing of its cause."""

from __future__ import annotations

import logging
import uuid

import asyncpg
import orjson
import pytest
from litestar.exceptions import (
    NotAuthorizedException,
    TooManyRequestsException,
    ValidationException,
)

from app.server.problems import (
    PROBLEM_JSON,
    REFUSED_RETRY_AFTER,
    NotFound,
    handle_exception,
    problem_for,
)
from app.store import ConcurrencyError, DatabaseUnavailableError, SessionBusyError, StoreError
from app.store.append import translate_error
from app.store.coalescer import AppendRefused


def body(exc: Exception) -> dict:
    response = handle_exception(None, exc)  # type: ignore[arg-type]
    assert response.media_type == PROBLEM_JSON
    return orjson.loads(response.content)


def test_an_api_refusal_keeps_its_status_and_sentence() -> None:
    assert body(NotFound("no session x")) == {
        "title": "Not Found",
        "status": 404,
        "detail": "no session x",
    }


def test_a_validation_error_names_the_fields_that_failed() -> None:
    exc = ValidationException(
        "Validation failed", extra=[{"key": "task", "message": "too short", "source": "body"}]
    )
    problem = body(exc)
    assert problem["status"] == 400
    assert problem["errors"] == [{"key": "task", "message": "too short", "source": "body"}]


def test_http_errors_keep_their_headers() -> None:
    problem, headers = problem_for(
        TooManyRequestsException("slow down", headers={"Retry-After": "7"})
    )
    assert (problem.status, headers) == (429, {"Retry-After": "7"})
    problem, headers = problem_for(
        NotAuthorizedException("who", headers={"WWW-Authenticate": "Bearer"})
    )
    assert problem.status == 401 and headers == {"WWW-Authenticate": "Bearer"}


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (ConcurrencyError(uuid.uuid4(), 1, 2), 409),
        (SessionBusyError(uuid.uuid4()), 409),
        (DatabaseUnavailableError("down"), 503),
        (ConnectionRefusedError("refused"), 503),
        (StoreError("something the user can fix"), 400),
    ],
)
def test_store_errors_map_to_whose_move_it_is(exc: Exception, status: int) -> None:
    assert body(exc)["status"] == status


def test_an_unexpected_error_is_a_500_with_an_id_and_no_details(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "password=hunter2 at /srv/app/secret.py line 12"
    with caplog.at_level(logging.ERROR, logger="app.server.problems"):
        problem = body(RuntimeError(secret))
    assert problem["status"] == 500
    assert secret not in orjson.dumps(problem).decode()
    assert "Traceback" not in orjson.dumps(problem).decode()
    error_id = problem["error_id"]
    assert error_id in problem["detail"]
    # the details are in the server's log, under that id, with the traceback
    record = next(r for r in caplog.records if error_id in r.getMessage())
    assert record.exc_info is not None and secret in str(record.exc_info[1])


@pytest.mark.parametrize(
    "exc",
    [
        asyncpg.DiskFullError('could not extend file "base/16384/2619": No space left on device'),
        translate_error(
            AppendRefused("53100", 'could not write to file "pg_wal/xlogtemp.7"', None, None),
            uuid.uuid4(),
            None,
        ),
    ],
)
def test_a_full_disk_is_a_503_with_retry_after_and_no_server_path(exc: Exception) -> None:
    problem, headers = problem_for(exc)
    assert (problem.status, headers) == (503, {"Retry-After": REFUSED_RETRY_AFTER})
    assert problem.detail == (
        "the database cannot take this now: its disk is full (an operator must free space); "
        "try again later"
    )
