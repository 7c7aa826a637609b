"""Secrets found after the fact, recognised by a keyed hash (issue 29; docs/erasure.md).

``chronicle redact --value-file`` finds a secret nobody knew to mask. From then on the masker
must replace it too, yet its text may be kept nowhere. So the store keeps HMAC-SHA256 of it
under the deployment's one random key (tables ``masker_key``, ``masked_secrets``) and hands
this module the key and the digests; this module never sees the secret again.

Text is cut into **tokens**: maximal runs of the characters secrets are made of. A secret is
recognised where it stands as whole tokens:

- ``DELIMITERS`` end a token: whitespace, control characters, lone surrogates, quotes (also
  typographic ones), brackets, ``,`` ``;`` and the backslash, and the glue of ``NAME=VALUE``,
  ``user:password``, ``a=1&b=2`` and ``a|b``. A ``.`` ends a token only where a token ends (a
  sentence's full stop), never inside one (a JWT, a host name). Letters of any script, digits
  and ``-_+/.~!?@#$%^*`` stay inside a token: so a key, a JWT or a password such as
  ``P@ss#w0rd!`` is one token, the cheap case. (A credential in a URL,
  ``https://user:PASSWORD@host``, is masked whatever it is: app/events/masking.py.)
- A secret's **core** is its text from its first token to the end of its last (delimiters at
  its ends are dropped, those inside kept as they are); ``tokens`` counts its tokens. Its
  digest is HMAC-SHA256(key, the core's UTF-8; a lone surrogate as itself).
- A string is split once. For each token count some secret has, every run of that many
  consecutive tokens (its text from the first's start to the last's end) is hashed and looked
  up; each hit becomes ``[secret found <the digest's first 8 hex>]``.

**The limit**: a secret glued to other token characters (``xSECRET``, ``SECRET-2``,
``/path/SECRET``, ``-pSECRET``) is no run of whole tokens there and is not recognised; nor is
one whose delimiters inside differ (another line break, one more space). The search of the log
(``redact --value-file``) is a plain substring search and finds those.

**Cost**: nothing while no secret is registered. A secret of one token (most keys, tokens and
passwords) costs a hash per distinct token of 8 characters or more in a string; one of
several tokens (a space, quote or ``:`` inside) a hash per run of tokens, for each distinct
count (docs/erasure.md has the measures).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from itertools import accumulate, compress
from typing import NamedTuple

from app.errors import ChronicleError

_DELIMITER = (
    r"\s\x00-\x1f\x7f\"'`()\[\]{}<>,;\\=:&|"
    "\u00ab\u00bb\u2018\u2019\u201a\u201c\u201d\u201e\u2039\u203a\ud800-\udfff"
)
#: A run of delimiters (captured: ``split`` keeps them): a ``.`` run is one only before a
#: delimiter or the end.
DELIMITERS = re.compile(rf"(\.*[{_DELIMITER}](?:[{_DELIMITER}]|\.+(?=[{_DELIMITER}]|\Z))*|\.+\Z)")
#: The tokens alone, as ``split`` makes them (never an empty one): what a secret of one token
#: needs, found in about half the time ``split`` takes.
TOKENS = re.compile(rf"\.*[^{_DELIMITER}.]+(?:\.+[^{_DELIMITER}.]+)*")
#: A core shorter than this is not kept: it would match where it is not the secret.
MIN_CORE_LENGTH = 8
#: JSON escapes, a run of ``\\uXXXX`` together (a surrogate pair is one character).
_JSON_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}(?:\\u[0-9a-fA-F]{4})*)')
_SIMPLE_ESCAPES = {
    '\\"': '"', "\\\\": "\\", "\\/": "/", "\\b": "\b", "\\f": "\f", "\\n": "\n", "\\r": "\r",
    "\\t": "\t",
}  # fmt: skip
#: Stored-form markers in JSON text: their strings are written differently (``$esc``) or not
#: at all (``$blob``), so such a text cannot be searched as it is.
_STORED_FORM_MARKERS = ('"$esc"', '"$blob"')


class NotMaskableError(ChronicleError, ValueError):
    """A value the masker cannot learn: too short or too plain once its ends are trimmed."""


class SecretCore(NamedTuple):
    """What of a secret is hashed, and how many tokens it spans."""

    text: str
    tokens: int


def split(text: str) -> list[str]:
    """``text`` as tokens (even indexes) and the delimiters between them (odd indexes); the
    first and the last token are empty when ``text`` starts or ends with a delimiter."""
    return DELIMITERS.split(text)


def secret_core(value: str) -> SecretCore:
    """The core of a secret (see the module); ``NotMaskableError`` when it has none worth
    keeping (under ``MIN_CORE_LENGTH`` characters, or only digits)."""
    parts = split(value)
    first = 0 if parts[0] else 2
    last = len(parts) - 1 if parts[-1] else len(parts) - 3
    text = "".join(parts[first : last + 1]) if first <= last else ""
    if len(text) < MIN_CORE_LENGTH or text.isdigit():
        raise NotMaskableError(
            "the value is too short or too plain for the masker to recognise safely "
            f"(at least {MIN_CORE_LENGTH} characters from its first to its last token, "
            "not only digits)"
        )
    return SecretCore(text, (last - first) // 2 + 1)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def found_digest(key: bytes, core: str) -> bytes:
    """HMAC-SHA256 of a secret's core under the deployment's masker key."""
    return FoundSecretMatcher(key, {}).digest(core)


def found_name(digest: bytes) -> str:
    """The name a found secret's placeholder shows: ``found`` and its digest's first 8 hex
    (``[secret found 1a2b3c4d]``): which secret, never what it was."""
    return f"found {digest[:4].hex()}"


def json_unescaped(json_text: str) -> str:
    """JSON text with its escapes decoded, so that a string's tokens in it are those of the
    string (``\\n`` would glue an ``n`` to the next token)."""
    if "\\" not in json_text:
        return json_text
    return _JSON_ESCAPE.sub(_decoded, json_text)


def _decoded(match: re.Match[str]) -> str:
    escape = match.group(0)
    simple = _SIMPLE_ESCAPES.get(escape)
    if simple is not None:
        return simple
    decoded: str = json.loads(f'"{escape}"')  # \uXXXX, a pair as one character
    return decoded


class FoundSecretMatcher:
    """Finds and replaces the found secrets whose digests it holds. Immutable."""

    def __init__(self, key: bytes, digests: Mapping[bytes, int]) -> None:
        """``digests``: each secret's digest and its number of tokens."""
        self._digests = frozenset(digests)
        #: the distinct token counts, fewest first (one token: the cheap, common case)
        self._counts = sorted(set(digests.values()))
        # HMAC's two keyed states, made once: a copy of each per hash is ~3x faster than
        # hmac.digest, which hashes the key's blocks again every time.
        block = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
        self._inner = hashlib.sha256(bytes(b ^ 0x36 for b in block))
        self._outer = hashlib.sha256(bytes(b ^ 0x5C for b in block))

    def __len__(self) -> int:
        return len(self._digests)

    def digest(self, text: str) -> bytes:
        inner = self._inner.copy()
        inner.update(_utf8(text))
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def _hits(self, candidates: Iterable[str]) -> dict[str, bytes]:
        """The candidates that are found secrets, with their digests."""
        inner, outer, digests = self._inner, self._outer, self._digests
        hits: dict[str, bytes] = {}
        for text in candidates:
            first = inner.copy()
            first.update(text.encode("utf-8", "surrogatepass"))
            second = outer.copy()
            second.update(first.digest())
            digest = second.digest()
            if digest in digests:
                hits[text] = digest
        return hits

    def _hits_among(self, windows: list[str]) -> dict[str, bytes]:
        """The distinct windows long enough to be a core (picked in C, no loop of Python's)
        that are found secrets."""
        distinct = set(windows)
        return self._hits(compress(distinct, map(MIN_CORE_LENGTH.__le__, map(len, distinct))))

    def occurs_in(self, text: str) -> bool:
        """Whether a found secret stands in ``text`` (see the module)."""
        if len(text) < MIN_CORE_LENGTH:
            return False
        counts = self._counts
        if counts[0] == 1 and self._hits_among(TOKENS.findall(text)):
            return True
        if counts[-1] == 1:
            return False
        parts = split(text)
        return any(self._hits_among(_windows(text, parts, n)) for n in counts if n > 1)

    def leaks_into_json(self, json_text: str) -> bool:
        """Whether a found secret may stand in a string of this JSON text. True for a text
        with stored-form markers, whose strings it does not show as they are."""
        if any(marker in json_text for marker in _STORED_FORM_MARKERS):
            return len(json_text) >= MIN_CORE_LENGTH
        return self.occurs_in(json_unescaped(json_text))

    def mask(self, text: str, placeholder: Callable[[str], str]) -> str:
        """``text`` with each found secret replaced by ``placeholder`` of its name
        (``found_name``). Overlapping hits are replaced as one span, with the first's name."""
        if not self.occurs_in(text):  # the common case: one pass, no positions
            return text
        parts = split(text)
        offsets = list(accumulate(map(len, parts), initial=0))
        spans: list[tuple[int, int, bytes]] = []
        for n in self._counts:
            windows = _windows(text, parts, n)
            hits = self._hits_among(windows)
            for index, window in enumerate(windows):
                digest = hits.get(window)
                if digest is not None:
                    spans.append((offsets[2 * index], offsets[2 * index + 2 * n - 1], digest))
        return _replaced(text, spans, placeholder)


def _windows(text: str, parts: list[str], tokens: int) -> list[str]:
    """Every run of ``tokens`` consecutive tokens of ``text`` (split as ``parts``), as text,
    in order (an edge's empty token included: it never matches, and keeps the indexes)."""
    count = (len(parts) + 1) // 2 - tokens + 1
    if count <= 0:
        return []
    if tokens == 1:
        return parts[::2]
    offsets = list(accumulate(map(len, parts), initial=0))
    starts = offsets[0 : 2 * count : 2]
    ends = offsets[2 * tokens - 1 :: 2]
    return list(map(text.__getitem__, map(slice, starts, ends)))


def _replaced(
    text: str, spans: list[tuple[int, int, bytes]], placeholder: Callable[[str], str]
) -> str:
    """``text`` with each span replaced, overlapping spans merged (leftmost, longest first)."""
    spans.sort(key=lambda span: (span[0], -span[1]))
    pieces: list[str] = []
    done = 0  # text before this is written out or replaced
    start, end, digest = spans[0]
    for next_start, next_end, next_digest in spans[1:]:
        if next_start < end:  # overlaps the current span: one replacement for both
            end = max(end, next_end)
            continue
        pieces += (text[done:start], placeholder(found_name(digest)))
        done, start, end, digest = end, next_start, next_end, next_digest
    pieces += (text[done:start], placeholder(found_name(digest)), text[end:])
    return "".join(pieces)


class FoundSecrets:
    """What this process knows of the secrets found after the fact: one object shared by
    every masker the store hands out (a ``BufferedSession``, a replay, the gateway keep the
    store's masker), its matcher replaced whole when the store learns more."""

    __slots__ = ("matcher",)

    def __init__(self) -> None:
        #: None while no secret is registered: the masker then does nothing more.
        self.matcher: FoundSecretMatcher | None = None

    def learn(self, key: bytes | None, digests: Mapping[bytes, int]) -> None:
        """Know exactly these secrets (their digests and token counts) from now on."""
        self.matcher = FoundSecretMatcher(key, digests) if key and digests else None

    def __len__(self) -> int:
        return len(self.matcher) if self.matcher is not None else 0
