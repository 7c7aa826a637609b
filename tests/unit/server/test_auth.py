"""Credentials are read strictly: a Bearer header, and the CSRF token a login cookie implies."""

from __future__ import annotations

import pytest
from litestar.exceptions import NotAuthorizedException

from app.server.auth import bearer_token, csrf_token_for
from app.sessions.sql.users import TOKEN_PREFIX, new_token, token_hash


def test_a_bearer_header_gives_its_token() -> None:
    assert bearer_token("Bearer chr_abc") == "chr_abc"
    assert bearer_token("bearer   chr_abc  ") == "chr_abc"
    assert bearer_token(None) is None


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", "chr_abc"])
def test_any_other_authorization_header_is_refused(header: str) -> None:
    with pytest.raises(NotAuthorizedException, match="Bearer <token>"):
        bearer_token(header)


def test_the_csrf_token_is_bound_to_its_session_cookie() -> None:
    first, second = new_token(), new_token()
    assert csrf_token_for(first) == csrf_token_for(first)
    assert csrf_token_for(first) != csrf_token_for(second)
    assert first not in csrf_token_for(first)  # the cookie's secret is not readable from it


def test_tokens_are_long_random_and_stored_as_their_sha256_only() -> None:
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100
    for token in tokens:
        assert token.startswith(TOKEN_PREFIX) and len(token) == len(TOKEN_PREFIX) + 43
        digest = token_hash(token)
        assert len(digest) == 32 and token.encode() not in digest
    import hashlib

    token = new_token()
    assert token_hash(token) == hashlib.sha256(token.encode()).digest()
