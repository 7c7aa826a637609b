"""Secrets found after the fact, recognised by their keyed hash only: tokens, cores, windows
of tokens, replacement, and the masker that shares what the store learns."""

from __future__ import annotations

import hmac
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.events.canonical import canonical_json
from app.events.found_secrets import (
    TOKENS,
    FoundSecretMatcher,
    FoundSecrets,
    NotMaskableError,
    found_digest,
    found_name,
    json_unescaped,
    secret_core,
    split,
)
from app.events.masking import SecretMasker, placeholder
from app.store.append import encode_batch

KEY = bytes(range(32))
API_KEY = "sk-proj-Ab0123456789xyz"
PASSWORD = "p@ss:w0rd!"  # two tokens: p@ss, w0rd!
PHRASE = "correct horse battery"


def matcher(*values: str) -> FoundSecretMatcher:
    digests = {}
    for value in values:
        core = secret_core(value)
        digests[found_digest(KEY, core.text)] = core.tokens
    return FoundSecretMatcher(KEY, digests)


def name_of(value: str) -> str:
    return placeholder(found_name(found_digest(KEY, secret_core(value).text)))


def mask(found: FoundSecretMatcher, text: str) -> str:
    return found.mask(text, placeholder)


# -- tokens ----------------------------------------------------------------------------------

#: Text made of what matters: token characters, delimiters, dots, NUL, a lone surrogate.
awkward_text = st.text(
    alphabet=st.sampled_from([*"ab1-_/+.!= :@\"'\n\t\\*", "\x00", "\ud800", "é", "\u201c"]),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(awkward_text)
def test_split_is_tokens_and_the_delimiters_between_them(text: str) -> None:
    parts = split(text)
    assert "".join(parts) == text
    assert len(parts) % 2 == 1
    assert all(parts[1:-1:2]) and all(parts[2:-2:2])  # nothing empty inside
    assert [token for token in parts[::2] if token] == TOKENS.findall(text)


def test_what_ends_a_token() -> None:
    assert split("KEY=abc user:pw@host a&b?c#d e|f (g) 'h' **i**")[::2] == [
        "KEY", "abc", "user", "pw@host", "a", "b?c#d", "e", "f", "g", "h", "**i**",
    ]  # fmt: skip
    # inside a token a dot stays (a JWT, a host), at its end it is a full stop
    assert split("eyJ.eyJ.sig. done.")[::2] == ["eyJ.eyJ.sig", "done", ""]
    assert split("\x00a\ud800b\u201cc\u201d")[::2] == ["", "a", "b", "c", ""]
    assert split("p4ss/w0rd!~$%^+-_@#?*")[::2] == ["p4ss/w0rd!~$%^+-_@#?*"]


def test_a_core_is_the_secret_from_its_first_token_to_its_last() -> None:
    assert secret_core(API_KEY) == (API_KEY, 1)
    assert secret_core(PASSWORD) == (PASSWORD, 2)
    assert secret_core("P@ss#w0rd*?!") == ("P@ss#w0rd*?!", 1)
    assert secret_core(f'  "{PHRASE}".\n') == (PHRASE, 3)
    for plain in ("short", "12345678901", "   ", "::::::::::::", '"ab" "cd"'):
        with pytest.raises(NotMaskableError):
            secret_core(plain)


def test_the_digest_is_plain_hmac_sha256_of_the_core() -> None:
    assert found_digest(KEY, API_KEY) == hmac.digest(KEY, API_KEY.encode(), "sha256")
    assert found_digest(KEY, "ab\ud800cdefgh") == hmac.digest(
        KEY, "ab\ud800cdefgh".encode("utf-8", "surrogatepass"), "sha256"
    )
    long_key = bytes(100)  # longer than a block: hashed first, as HMAC says
    assert FoundSecretMatcher(long_key, {}).digest("x") == hmac.digest(long_key, b"x", "sha256")


# -- finding and replacing -------------------------------------------------------------------


def test_each_occurrence_is_replaced_where_it_stands_as_whole_tokens() -> None:
    found = matcher(API_KEY, PASSWORD, PHRASE)
    key, password, phrase = name_of(API_KEY), name_of(PASSWORD), name_of(PHRASE)
    assert key == f"[secret found {found_digest(KEY, API_KEY)[:4].hex()}]"
    cases = {
        API_KEY: key,  # the whole string
        f"{API_KEY} at the start, at the end {API_KEY}": f"{key} at the start, at the end {key}",
        f"export OPENAI_API_KEY={API_KEY}; echo {API_KEY}.": (
            f"export OPENAI_API_KEY={key}; echo {key}."
        ),
        f"curl -u u:{PASSWORD}|sh x=1&pw={PASSWORD}&y": (
            f"curl -u u:{password}|sh x=1&pw={password}&y"
        ),
        f"say {PHRASE} staple": f"say {phrase} staple",
        f"({API_KEY}),\x00{API_KEY}\ud800": f"({key}),\x00{key}\ud800",
        f'{{"token":"{API_KEY}"}}': f'{{"token":"{key}"}}',
    }
    for text, masked in cases.items():
        assert mask(found, text) == masked, text


def test_a_secret_glued_to_other_token_characters_is_not_found() -> None:
    """The documented limit: not a run of whole tokens there (the log's search finds it)."""
    found = matcher(API_KEY, PHRASE)
    for text in (
        f"x{API_KEY}",
        f"{API_KEY}-2",
        f"/path/{API_KEY}",
        f"-p{API_KEY}",
        f"**{API_KEY}**",  # markdown's bold: a password may hold a *
        "correct  horse battery",  # another delimiter inside
        API_KEY[:-1],
    ):
        assert mask(found, text) == text
        assert not found.occurs_in(text)


def test_repeated_and_overlapping_secrets() -> None:
    found = matcher("alpha-one beta-two", "beta-two gamma-three")
    first = name_of("alpha-one beta-two")
    # the two overlap on beta-two: one replacement for both, nothing of either left
    assert mask(found, "alpha-one beta-two gamma-three.") == f"{first}."
    back_to_back = "alpha-one beta-two " * 3
    assert mask(found, back_to_back) == f"{first} " * 3
    once = matcher(API_KEY)
    assert mask(once, f"{API_KEY}\n" * 1000) == f"{name_of(API_KEY)}\n" * 1000


def test_megabyte_strings() -> None:
    found = matcher(API_KEY, PASSWORD)
    filler = "lorem ipsum-dolor sit_amet 0123456789abcdef x=1;\n" * 20_000  # 1 MB
    text = f"{API_KEY} {filler}{PASSWORD}"
    masked = mask(found, text)
    assert masked == f"{name_of(API_KEY)} {filler}{name_of(PASSWORD)}"
    assert mask(found, filler) is filler
    nul_text = "\x00" * 1_000_000 + API_KEY
    assert mask(found, nul_text) == "\x00" * 1_000_000 + name_of(API_KEY)
    surrogates = "\udfff" * 500_000 + API_KEY + "\ud800" * 500_000
    assert API_KEY not in mask(found, surrogates)


def test_json_text_is_searched_with_its_escapes_decoded() -> None:
    found = matcher(API_KEY, 'say "hi" there-now')
    # \n would glue its n to the key; \" inside a secret of several tokens
    assert found.leaks_into_json(canonical_json({"out": f"line\n{API_KEY}"}))
    assert found.leaks_into_json(canonical_json({"out": 'x say "hi" there-now'}))
    assert found.leaks_into_json(json.dumps({"out": f"\u00e9\n{API_KEY}"}, ensure_ascii=True))
    assert not found.leaks_into_json(canonical_json({"out": f"line\n{API_KEY}x"}))
    assert found.leaks_into_json(canonical_json({API_KEY: 1}))  # a key too
    # a stored-form marker: its strings are not shown as they are, so it may hold one
    assert found.leaks_into_json('{"$esc":"abc\\\\0"}')
    assert json_unescaped("a\\\\nb\\u00e9\\ud83d\\ude00\\/") == "a\\nbé\U0001f600/"


# -- the masker ------------------------------------------------------------------------------


def learned(*values: str) -> FoundSecrets:
    found = FoundSecrets()
    digests = {found_digest(KEY, secret_core(v).text): secret_core(v).tokens for v in values}
    found.learn(KEY, digests)
    return found


def test_every_masker_sharing_found_secrets_learns_at_once() -> None:
    found = FoundSecrets()
    masker = SecretMasker({"sk-known-0123456789": "OPENAI_API_KEY"}).with_found(found)
    copy = masker.with_secrets({"another-known-secret": "TOKEN"})  # keeps what it shares
    text = f"{API_KEY} sk-known-0123456789"
    assert masker.mask_text(text) == f"{API_KEY} [secret OPENAI_API_KEY]"
    assert not masker.leaks_into_json(canonical_json({"a": API_KEY}))

    found.learn(KEY, {found_digest(KEY, API_KEY): 1})
    assert len(found) == 1
    for each in (masker, copy):
        assert each.mask_text(text) == f"{name_of(API_KEY)} [secret OPENAI_API_KEY]"
        assert each.leaks_into_json(canonical_json({"a": API_KEY}))
    found.learn(KEY, {})
    assert found.matcher is None and masker.mask_text(API_KEY) == API_KEY


def test_values_keys_and_recorded_payloads_are_masked() -> None:
    masker = SecretMasker().with_found(learned(API_KEY, PASSWORD))
    value = {"env": {API_KEY: [f"pw={PASSWORD}", 3, None]}, "n": 1.5}
    assert masker.mask_value(value) == {
        "env": {name_of(API_KEY): [f"pw={name_of(PASSWORD)}", 3, None]},
        "n": 1.5,
    }
    batch = encode_batch(
        [
            {"kind": "run.output", "output": f"token {API_KEY}\n", "exit_code": 0, "cause": 1},
            # escaped (a NUL), and a blob
            {"kind": "run.output", "output": f"\x00{PASSWORD}\n" + "y" * 70_000, "cause": 2},
        ],
        1 << 20,
        masker,
        blob_threshold=64 * 1024,
    )
    recorded = "".join(batch.payload_texts) + "".join(batch.blobs.values())
    assert API_KEY not in recorded and PASSWORD not in recorded
    assert name_of(API_KEY) in recorded and name_of(PASSWORD) in recorded
