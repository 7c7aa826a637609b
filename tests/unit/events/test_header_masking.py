"""Credentials an agent writes out in other forms than a known value or a URL's user info: an
``Authorization`` or ``X-Api-Key`` header (in a command, its output, a headers mapping) and an
OAuth redirect's ``#access_token=`` fragment. Before, all of these reached the log as written
(a masker knowing no secret masked only URL user info and query parameters)."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.events.canonical import canonicalise
from app.events.masking import (
    AUTH_HEADER,
    HEADER_NAME_PARTS,
    SECRET_HEADER_JSON_KEY,
    SecretMasker,
    environment_secrets,
    has_auth_header,
    mask_auth_headers,
    mask_url,
    may_name_a_secret_header,
)
from app.store.append import encode_batch

BASIC = "dXNlcjpodW50ZXIyLXBhc3N3b3Jk"  # user:hunter2-password
BEARER = "sk-ant-api03-Zq81kd0Lw2"


@pytest.mark.parametrize(
    ("text", "secret", "masked"),
    [
        (
            f'curl -H "Authorization: Basic {BASIC}" https://api.example/v1',
            BASIC,
            'curl -H "Authorization: Basic [secret authorization]" https://api.example/v1',
        ),
        (
            f"< Proxy-Authorization: Bearer {BEARER}\n",
            BEARER,
            "< Proxy-Authorization: Bearer [secret proxy-authorization]\n",
        ),
        (f"x-api-key: {BEARER}", BEARER, "x-api-key: [secret x-api-key]"),
        (
            f'{{"Authorization": "Token {BEARER}"}}',
            BEARER,
            '{"Authorization": "Token [secret authorization]"}',
        ),
        (
            "redirected to https://app.example/cb#access_token=ya29.a0Zk1&token_type=bearer",
            "ya29.a0Zk1",
            "redirected to https://app.example/cb#access_token=[secret url access_token]"
            "&token_type=bearer",
        ),
    ],
)
def test_header_and_fragment_credentials_are_masked(text: str, secret: str, masked: str) -> None:
    masker = SecretMasker()
    assert masker.mask_text(text) == masked
    assert secret not in masker.mask_text(text)
    assert masker.mask_text(masked) == masked  # masking twice changes nothing


@pytest.mark.parametrize(
    "text",
    [
        'curl -H "Authorization: Bearer $OPENAI_API_KEY" https://api.example/v1',
        "authorization: required for every route",
        "https://docs.example/guide#section-2",
        "see https://docs.example/guide#key",
    ],
)
def test_what_is_no_credential_stays(text: str) -> None:
    assert SecretMasker().mask_text(text) == text


def test_a_headers_mapping_is_masked_at_the_logs_door() -> None:
    """An MCP call's arguments with a headers mapping: each string is masked on its own, so the
    key says what the value is."""
    payload = {
        "kind": "mcp.call",
        "server": "fetch",
        "tool": "get",
        "arguments": {"headers": {"Authorization": f"Bearer {BEARER}", "X-Api-Key": "k" * 20}},
    }
    masker = SecretMasker()
    batch = encode_batch([payload], 1 << 20, masker)
    assert BEARER not in batch.payload_texts[0] and "k" * 20 not in batch.payload_texts[0]
    headers = batch.payloads[0]["arguments"]["headers"]
    assert headers == {
        "Authorization": "Bearer [secret authorization]",
        "X-Api-Key": "[secret x-api-key]",
    }
    assert batch.payload_texts[0] == canonicalise(batch.payloads[0])[1]
    assert not masker.leaks_into_json(batch.payload_texts[0])


def test_a_command_writing_a_header_out_is_masked_at_the_logs_door() -> None:
    payload = {"kind": "run", "command": f"curl -u x -H 'Authorization: Basic {BASIC}' h"}
    batch = encode_batch([payload], 1 << 20, SecretMasker())
    assert BASIC not in batch.payload_texts[0]


def test_a_fragment_without_parameters_is_left_alone() -> None:
    assert mask_url("https://h/p?q=1#top") == "https://h/p?q=1#top"


def test_variables_named_for_authorization_are_secrets() -> None:
    """An MCP server's ``env`` or the host's environment: a header value or an access token
    kept under a name without KEY or TOKEN in it."""
    found = environment_secrets(
        {
            "UPSTREAM_AUTHORIZATION": f"Basic {BASIC}",
            "BASIC_AUTH": "deploy:hunter2-pass",
            "GH_PAT": "github_pat_11ABCDEF0123456789",
            "GIT_AUTHOR_NAME": "Ada Lovelace-Byron",
            "PATH": "/usr/local/bin:/usr/bin",
            "PATCH_LEVEL": "2026-12-01-a",
        }
    )
    assert found == {
        f"Basic {BASIC}": "UPSTREAM_AUTHORIZATION",
        "deploy:hunter2-pass": "BASIC_AUTH",
        "github_pat_11ABCDEF0123456789": "GH_PAT",
    }


# The cheap test before the header regexes: it may only say "no" where they find nothing.

NAME_LETTERS = re.compile("(?i)[" + "".join(set("".join(HEADER_NAME_PARTS)) - {"-"}) + "]")


def test_every_character_the_header_regexes_read_as_a_name_letter_is_mapped() -> None:
    twins = [
        chr(code) for code in range(128, sys.maxunicode + 1) if NAME_LETTERS.fullmatch(chr(code))
    ]
    assert twins  # the regex engine reads some (dotted and dotless I, the Kelvin sign)
    for twin in twins:
        letter = next(c for c in "authorizationpkey" if re.fullmatch(f"(?i){c}", twin))
        name = next(part for part in HEADER_NAME_PARTS if letter in part)
        text = f"{name.replace(letter, twin)}: Bearer sk-0123456789abcdef"
        assert AUTH_HEADER.search(text), repr(twin)
        assert may_name_a_secret_header(text), repr(twin)


#: Pieces of texts near the names: spelled in cases, with twins beyond ASCII, cut short.
PIECES = ["Authorization", "AUTHORİZATİON", "x-api-\u212aey", "Api-Key", "authoriz", "api", '"',
          "\\", ":", "=", " ", "Bearer ", "token ", "sk-0123456789abcdef", "$KEY", "é"]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
def test_the_cheap_test_says_no_only_where_the_header_regexes_find_nothing(text: str) -> None:
    if not may_name_a_secret_header(text):
        assert AUTH_HEADER.search(text) is None
        assert SECRET_HEADER_JSON_KEY.search(text) is None
        assert not has_auth_header(text)
        assert mask_auth_headers(text) == text
