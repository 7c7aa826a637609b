"""Database URL helpers: one URL form for users, the dialect forms each driver wants."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


def asyncpg_dsn(url: str) -> str:
    """asyncpg takes ``postgresql://``; accept the SQLAlchemy-style driver suffixes too."""
    scheme, _, rest = url.partition("://")
    return f"postgresql://{rest}" if scheme.startswith("postgres") else url


def sqlalchemy_url(url: str) -> str:
    """SQLAlchemy (alembic) uses psycopg 3."""
    return "postgresql+psycopg://" + asyncpg_dsn(url).partition("://")[2]


def redact(url: str) -> str:
    """The URL with its password replaced, safe to print."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return parts._replace(netloc=netloc).geturl()
    return url


def failover_url(urls: Sequence[str]) -> str:
    """One URL naming the servers of ``urls`` in turn, for a writer: with
    ``target_session_attrs=read-write`` a new connection goes to whichever of them takes
    writes, so after a standby is promoted the store goes on against it. The servers must
    share the login and database (a standby's do: they are the primary's); the first URL's
    other parameters are kept."""
    if not urls:
        raise ValueError("no URL to join")
    parts = [urlsplit(asyncpg_dsn(url)) for url in urls]
    first = parts[0]
    hosts, ports = [], []
    for url, part in zip(urls, parts, strict=True):
        login = (part.username, part.password, part.path)
        if login != (first.username, first.password, first.path):
            raise ValueError(f"{redact(url)} names another login or database than the first URL")
        query = dict(parse_qsl(part.query))
        host = query.get("host") or part.hostname
        if not host or "," in host:
            raise ValueError(f"{redact(url)} names no single host")
        hosts.append(host)
        ports.append(str(query.get("port") or part.port or 5432))
    query = {key: value for key, value in parse_qsl(first.query) if key not in ("host", "port")}
    query.update(host=",".join(hosts), port=",".join(ports), target_session_attrs="read-write")
    auth = first.netloc.rpartition("@")[0]
    netloc = f"{auth}@" if auth else ""
    return urlunsplit(
        (first.scheme, netloc, first.path, urlencode(query, safe="/,"), first.fragment)
    )
