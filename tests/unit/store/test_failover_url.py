"""The write URL that names a primary and its standbys (app/store/urls.py failover_url)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from app.store.urls import failover_url, redact


def test_sockets_and_ports_are_listed_in_order_and_only_the_writer_is_taken() -> None:
    url = failover_url([
        "postgresql://chronicle_app:p%40ss@/chronicle?host=/run/a&port=5432",
        "postgresql://chronicle_app:p%40ss@/chronicle?host=/run/b&port=5433",
    ])  # fmt: skip
    parts = urlsplit(url)
    assert (parts.username, parts.password, parts.path) == ("chronicle_app", "p%40ss", "/chronicle")
    query = parse_qs(parts.query)
    assert query == {
        "host": ["/run/a,/run/b"], "port": ["5432,5433"], "target_session_attrs": ["read-write"],
    }  # fmt: skip
    assert "p%40ss" not in redact(url)


def test_network_hosts_keep_the_first_urls_other_parameters() -> None:
    url = failover_url([
        "postgres://app:pw@db-1.internal:6432/chronicle?sslmode=verify-full",
        "postgresql+psycopg://app:pw@db-2.internal/chronicle",
    ])  # fmt: skip
    query = parse_qs(urlsplit(url).query)
    assert url.startswith("postgresql://app:pw@/chronicle?")
    assert query["host"] == ["db-1.internal,db-2.internal"]
    assert query["port"] == ["6432,5432"]
    assert query["sslmode"] == ["verify-full"]


@pytest.mark.parametrize(
    ("urls", "problem"),
    [
        ([], "no URL"),
        (["postgresql://app:pw@a/chronicle", "postgresql://other:pw@b/chronicle"], "another login"),
        (["postgresql://app:pw@a/chronicle", "postgresql://app:pw@b/elsewhere"], "another login"),
        (["postgresql://app:pw@a,b/chronicle"], "no single host"),
        (["postgresql://app:pw@/chronicle"], "no single host"),
    ],
)
def test_urls_that_cannot_be_joined_are_refused(urls: list[str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        failover_url(urls)
