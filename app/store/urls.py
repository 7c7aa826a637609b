"""Database URL helpers: one URL form for users, the dialect forms each driver wants."""

from __future__ import annotations

from urllib.parse import urlsplit


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
