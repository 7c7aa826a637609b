"""Which refusals of PostgreSQL pass (a full disk, no memory or connections left, a server
that takes no writes): one list, its exception classes, and the store's error for each, in
plain words without the server's file paths."""

from __future__ import annotations

import uuid

import asyncpg
import pytest
from asyncpg.exceptions._base import PostgresMessageMeta

from app.store import RefusedForNowError, StoreError
from app.store.append import translate_error
from app.store.coalescer import AppendRefused
from app.store.transient import REFUSED_FOR_NOW, REFUSED_FOR_NOW_REASONS, refused_for_now

SERVER_MESSAGE = 'could not extend file "base/16384/2619": No space left on device'


@pytest.mark.parametrize("sqlstate", sorted(REFUSED_FOR_NOW_REASONS))
def test_each_listed_state_is_caught_by_the_classes_and_said_plainly(sqlstate: str) -> None:
    raw = PostgresMessageMeta.get_message_class_for_sqlstate(sqlstate)(SERVER_MESSAGE)
    assert isinstance(raw, REFUSED_FOR_NOW)
    refusal = refused_for_now(raw)
    assert refusal is not None and refusal.sqlstate == sqlstate
    assert refusal.server_message == SERVER_MESSAGE  # for the operator's log
    assert "/" not in str(refusal) and str(refusal).endswith("; try again later")


def test_class_53_is_listed_whole() -> None:
    class_53 = {
        sqlstate
        for sqlstate in ("53000", "53100", "53200", "53300", "53400")
        if issubclass(
            PostgresMessageMeta.get_message_class_for_sqlstate(sqlstate),
            asyncpg.InsufficientResourcesError,
        )
    }
    assert class_53 <= set(REFUSED_FOR_NOW_REASONS)


@pytest.mark.parametrize(
    "exc",
    [
        asyncpg.UniqueViolationError("duplicate key"),
        PostgresMessageMeta.get_message_class_for_sqlstate("58030")("could not read block 7"),
        asyncpg.CannotConnectNowError("the database system is starting up"),  # gone, not refused
        ValueError("53100"),
    ],
)
def test_other_errors_are_not_refusals_for_now(exc: Exception) -> None:
    assert refused_for_now(exc) is None
    assert not isinstance(exc, REFUSED_FOR_NOW)


def test_a_refused_append_becomes_the_stores_error() -> None:
    refused = AppendRefused("53100", SERVER_MESSAGE, None, None)
    error = translate_error(refused, uuid.uuid4(), 3)
    assert isinstance(error, RefusedForNowError) and isinstance(error, StoreError)
    assert str(error) == (
        "the database cannot take this now: its disk is full (an operator must free space); "
        "try again later"
    )
    other = translate_error(AppendRefused("XX001", "invalid page", None, None), uuid.uuid4(), 3)
    assert not isinstance(other, RefusedForNowError)
