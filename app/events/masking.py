"""Secrets never enter the log: known secret values are replaced before an event is recorded.

A value is known to be secret when the deployment says so — a configured key, an
environment variable whose name says KEY, TOKEN, SECRET or PASSWORD, the credentials in a
URL. Every string of every payload is searched for every known value; a hit becomes
``[secret NAME]`` (the name says which secret it was, never its value). Credentials written
into any URL are masked too, known or not (``--base-url http://user:PASSWORD@host/v1``, a
``?api_key=`` in a command's output): the password of its user info, a user name that is
really a token, and query (or fragment: ``#access_token=``) parameters named like secrets.
So are the credentials of an ``Authorization`` (or ``X-Api-Key``) header written out, in a
command (``curl -H "Authorization: Bearer ..."``), its output, or a headers mapping (the
value of a key of that name). Masking happens at the
log's door (the event store) and before prompt messages are hashed, so what the model, the
log and ``verify`` see is the same masked text.

Short values are not treated as secrets: ``MAX_TOKENS=4096`` or ``USE_KEYRING=true`` would
otherwise blank out every ``4096`` and ``true`` in the log.

Secrets found after the fact (``chronicle redact --value-file``) are known by a keyed hash
only, never by their text: the store hands the masker a ``FoundSecrets`` it keeps up to date,
and a hit becomes ``[secret found 1a2b3c4d]`` (app/events/found_secrets.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from app.events.found_secrets import FoundSecrets

#: Environment variable names whose values are secrets: also an ``AUTHORIZATION`` (a header's
#: value), an ``AUTH`` or ``PAT`` (a personal access token) part between underscores
#: (``BASIC_AUTH``, ``GH_PAT``), never ``GIT_AUTHOR_NAME`` or ``PATH``.
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTHORIZATION|(?:^|_)(?:AUTH|PAT)(?:_|$)",
    re.IGNORECASE,
)
#: Values shorter than this are never masked (too likely to occur by chance).
MIN_SECRET_LENGTH = 8
#: Names that match SECRET_NAME but hold no secret.
NOT_SECRET_NAMES = frozenset({"CHRONICLE_ANCHOR_KEY_FILE", "CHRONICLE_LLM_API_KEY_FILE"})


def placeholder(name: str) -> str:
    """What a secret is replaced by."""
    return f"[secret {name}]"


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name)) and name.upper() not in NOT_SECRET_NAMES


def worth_masking(value: str) -> bool:
    """A value long and irregular enough that finding it in text means the secret leaked."""
    stripped = value.strip()
    if len(stripped) < MIN_SECRET_LENGTH:
        return False
    if stripped.isdigit() or stripped.lower() in ("true", "false", "none", "null"):
        return False
    return not stripped.startswith("/")  # a path (KEY_FILE=/etc/...) is not the secret


def url_secrets(name: str, url: str | None) -> dict[str, str]:
    """The password (and a token-like user name) in ``scheme://user:password@host/...``."""
    if not url or "@" not in url:
        return {}
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return {}
    found: dict[str, str] = {}
    if password:
        found[password] = f"{name} password"
        found[unquote(password)] = f"{name} password"
    elif parts.scheme in ("http", "https") and _token_like(parts.username):
        found[str(parts.username)] = f"{name} credentials"  # https://TOKEN@host
    return found


def _token_like(user: str | None) -> bool:
    """A URL user name that is really a token (long, with digits), not a login name."""
    return bool(user) and len(str(user)) >= 20 and any(c.isdigit() for c in str(user))


#: A URL as it appears in text: a scheme, ``://``, then up to a space, quote or bracket.
URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s\"'<>\\`]+")
#: Query parameter names whose values are secrets (``key``, ``api_key``, ``access_token``,
#: ``X-Amz-Signature``, ``sig``): the name, or its last ``_``/``-``/``.`` part, is one of these.
SECRET_PARAMETER_WORDS = frozenset(
    {
        "key", "apikey", "token", "accesstoken", "secret", "password", "passwd", "pwd",
        "sig", "signature", "credential", "credentials", "auth",
    }
)  # fmt: skip
#: The start of a placeholder: a value that is one already is not masked again.
MASKED = "[secret"


def is_secret_parameter(name: str) -> bool:
    """Whether a URL query parameter of this name carries a secret."""
    lowered = unquote(name).lower()
    last = re.split(r"[_.\-]", lowered)[-1]
    return lowered.replace("_", "").replace("-", "") in SECRET_PARAMETER_WORDS or (
        last in SECRET_PARAMETER_WORDS
    )


def mask_url(url: str) -> str:
    """``url`` with its credentials replaced: the user info's password (or a user name that is
    a token) and the values of query parameters named like secrets. Short values too: where
    they stand says they are secret, unlike a bare value found in text."""
    scheme, _, rest = url.partition("://")
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        userinfo, _, host = authority.rpartition("@")
        user, colon, password = userinfo.partition(":")
        if colon and password and not password.startswith(MASKED):
            authority = f"{user}:{placeholder('url password')}@{host}"
        elif not colon and _token_like(user) and scheme.lower() in ("http", "https"):
            authority = f"{placeholder('url credentials')}@{host}"
    before_fragment, hash_, fragment = tail.partition("#")
    if "?" in before_fragment:
        path, _, query = before_fragment.partition("?")
        before_fragment = f"{path}?{_masked_query(query)}"
    if "=" in fragment:  # an OAuth redirect's #access_token=...&token_type=bearer
        fragment = _masked_query(fragment)
    return f"{scheme}://{authority}{before_fragment}{hash_}{fragment}"


def _masked_query(query: str) -> str:
    parts = []
    for part in query.split("&"):
        name, equals, value = part.partition("=")
        if equals and value and not value.startswith(MASKED) and is_secret_parameter(name):
            part = f"{name}={placeholder('url ' + unquote(name))}"
        parts.append(part)
    return "&".join(parts)


def mask_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it masked (see ``mask_url``)."""
    if "://" not in text:
        return text
    return URL_IN_TEXT.sub(lambda m: mask_url(m.group(0)), text)


def has_url_credentials(text: str) -> bool:
    """Whether some URL in ``text`` (plain or JSON text) holds credentials ``mask_url`` masks."""
    if "://" not in text:
        return False
    for match in URL_IN_TEXT.finditer(text):
        url = match.group(0)
        if ("@" in url or "=" in url) and mask_url(url) != url:
            return True
    return False


#: Header names whose values are credentials.
SECRET_HEADER_NAMES = r"(?:proxy-)?authorization|x-api-key|api-key|x-goog-api-key"
#: Such a header written out: ``Authorization: Bearer VALUE``, ``"Authorization":"Basic VALUE"``
#: (also as JSON text, quotes escaped), ``x-api-key=VALUE``. The value is the credential (the
#: scheme word stays): 8 characters or more after a scheme word, else only one that looks like
#: a key (16 or more, with a digit), so that prose ("authorization: required") stays.
AUTH_HEADER = re.compile(
    rf"(?i)\b({SECRET_HEADER_NAMES})(\\?[\"']?\s*[:=]\s*\\?[\"']?\s*)"
    r"((?:basic|bearer|token)\s+)?([^\s\"'\\<>,;]{8,})"
)
#: A mapping key that is such a header's name (a headers dict): its string value is masked.
SECRET_HEADER_KEY = re.compile(rf"(?i)^(?:{SECRET_HEADER_NAMES})$")
#: Such a key in JSON text, with a value ``mask_header_value`` masks (or may: a cheap test).
SECRET_HEADER_JSON_KEY = re.compile(
    rf'(?i)"(?:{SECRET_HEADER_NAMES})":"(?:(?:basic|bearer|token)\s+)?(?![$\[])[^"\s]{{8}}'
)
#: The credential in a header's value: an optional scheme word, then the value.
HEADER_VALUE = re.compile(r"(?i)^(\s*(?:(?:basic|bearer|token)\s+)?)(\S{8,})(\s*)$")


def _header_credential(match: re.Match[str]) -> str:
    name, separator, scheme, value = match.groups()
    if value.startswith(("$", MASKED)):  # a shell variable's name, or masked already
        return match.group(0)
    if not scheme and not _key_like(value):
        return match.group(0)
    return f"{name}{separator}{scheme or ''}{placeholder(name.lower())}"


def _key_like(value: str) -> bool:
    return len(value) >= 16 and any(c.isdigit() for c in value)


#: What every name of ``SECRET_HEADER_NAMES`` holds, lowercase: a text without either cannot
#: hold a header credential, and two substring searches are ~100x cheaper than the
#: case-insensitive regexes on the payload of every append.
HEADER_NAME_PARTS = ("authorization", "api-key")
#: The characters beyond ASCII that a case-insensitive regex matches to a letter of those
#: names (dotted and dotless I, the Kelvin sign), as that letter: ``str.lower`` alone maps
#: "İ" to two characters, and would let the cheap test miss what the regex finds.
_REGEX_CASE_TWINS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u212a": "k"})


def may_name_a_secret_header(text: str) -> bool:
    """False only when no header name of ``SECRET_HEADER_NAMES`` can match in ``text``."""
    low = text.lower() if text.isascii() else text.translate(_REGEX_CASE_TWINS).lower()
    return any(part in low for part in HEADER_NAME_PARTS)


def mask_auth_headers(text: str) -> str:
    """``text`` with the credentials of every header written out in it masked."""
    if not may_name_a_secret_header(text):
        return text
    return AUTH_HEADER.sub(_header_credential, text)


def has_auth_header(text: str) -> bool:
    """Whether ``text`` (plain or JSON text) holds a header credential ``mask_auth_headers``
    (or a headers mapping's masking) masks."""
    if not may_name_a_secret_header(text):
        return False
    if SECRET_HEADER_JSON_KEY.search(text):
        return True
    return any(_header_credential(m) != m.group(0) for m in AUTH_HEADER.finditer(text))


def mask_header_value(name: str, value: str) -> str:
    """The value of a header called ``name``, its credential masked (the scheme word kept)."""
    found = HEADER_VALUE.match(value)
    if found is None or found.group(2).startswith(("$", MASKED)):
        return value
    return f"{found.group(1)}{placeholder(name.lower())}{found.group(3)}"


def environment_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """``{value: name}`` for variables named like secrets, and credentials in URL variables."""
    found: dict[str, str] = {}
    for name, value in environ.items():
        if is_secret_name(name):
            found[value] = name
        if "://" in value:
            found.update(url_secrets(name, value))
    return found


class SecretMasker:
    """Replaces known secret values, secrets found after the fact, and credentials in URLs, in
    text and in JSON-like values. Immutable once built, but for the ``FoundSecrets`` it shares
    with the store that keeps it up to date."""

    def __init__(
        self, secrets: Mapping[str, str] | None = None, found: FoundSecrets | None = None
    ) -> None:
        """``secrets`` maps each secret value to the name shown in its place; ``found``: the
        secrets found after the fact that the store knows (by their keyed hashes)."""
        self._found = found
        usable = {
            v: n for v, n in (secrets or {}).items() if isinstance(v, str) and worth_masking(v)
        }
        self._names = dict(usable)
        # Longest first, so a secret that contains another is replaced whole.
        ordered = sorted(usable, key=len, reverse=True)
        self._raw = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        # The same values as they appear inside JSON strings (quotes, backslashes escaped).
        escaped = {json.dumps(v, ensure_ascii=False)[1:-1] for v in ordered}
        self._json = (
            re.compile("|".join(map(re.escape, sorted(escaped, key=len, reverse=True))))
            if escaped
            else None
        )

    @classmethod
    def merged(cls, *sources: Mapping[str, str] | None) -> SecretMasker:
        combined: dict[str, str] = {}
        for source in sources:
            combined.update(source or {})
        return cls(combined)

    def with_secrets(self, secrets: Mapping[str, str]) -> SecretMasker:
        """A masker that knows these secrets too."""
        return SecretMasker({**self._names, **secrets}, self._found)

    def with_found(self, found: FoundSecrets) -> SecretMasker:
        """A masker that also replaces the found secrets ``found`` knows, as it learns them."""
        return SecretMasker(self._names, found)

    @property
    def names(self) -> list[str]:
        """Which secrets it knows (their names, for diagnostics; never the values)."""
        return sorted(set(self._names.values()))

    def __bool__(self) -> bool:
        """Always true: even a masker that knows no secret masks the credentials in URLs."""
        return True

    def mask_text(self, text: str) -> str:
        if not text:
            return text
        if self._raw is not None:
            text = self._raw.sub(lambda m: placeholder(self._names[m.group(0)]), text)
        found = self._found.matcher if self._found is not None else None
        if found is not None:
            text = found.mask(text, placeholder)
        return mask_auth_headers(mask_urls(text))

    def leaks_into_json(self, json_text: str) -> bool:
        """Does this JSON text contain a known secret, a found one, or a URL's or a header's
        credentials? (The cheap test before masking.)"""
        found = self._found.matcher if self._found is not None else None
        return (
            (self._json is not None and self._json.search(json_text) is not None)
            or has_url_credentials(json_text)
            or has_auth_header(json_text)
            or (found is not None and found.leaks_into_json(json_text))
        )

    def mask_value(self, value: Any) -> Any:
        """``value`` with every string in it (keys too) masked."""
        return self._mask(value)

    def _mask(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.mask_text(value)
        if isinstance(value, Mapping):
            return {
                self.mask_text(k) if isinstance(k, str) else k: self._mask_item(k, v)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._mask(item) for item in value]
        return value

    def _mask_item(self, key: Any, value: Any) -> Any:
        masked = self._mask(value)
        if isinstance(key, str) and isinstance(masked, str) and SECRET_HEADER_KEY.match(key):
            return mask_header_value(key, masked)
        return masked


def secrets_from(pairs: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """``{value: name}`` for the given (name, value) pairs that have a value."""
    return {value: name for name, value in pairs if value}
