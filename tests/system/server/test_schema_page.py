"""``/schema`` runs no third-party script on Chronicle's origin: every page under it loads
scripts only from its own origin or with integrity pinned, and a Content-Security-Policy says
so to the browser.

Before, ``/schema`` (Scalar) and ``/schema/swagger`` (Swagger UI) loaded their scripts from a
CDN, unpinned: whoever served those files could run code next to the login cookie.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import httpx

from tests.support.chronicle_server import ServerProcess

PAGES = ("/schema", "/schema/", "/schema/swagger", "/schema/redoc", "/schema/elements")


class Scripts(HTMLParser):
    """Every ``<script>`` of a page: its src (None for inline) and integrity."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str | None, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            named = dict(attrs)
            self.found.append((named.get("src"), named.get("integrity")))


def test_no_schema_page_runs_a_script_from_elsewhere(shared_server: ServerProcess) -> None:
    origin = urlsplit(shared_server.url).netloc
    for page in PAGES:
        response = httpx.get(f"{shared_server.url}{page}")
        if "html" not in response.headers.get("content-type", ""):
            continue
        parser = Scripts()
        parser.feed(response.text)
        for src, integrity in parser.found:
            if src is None:
                continue
            same_origin = urlsplit(urljoin(f"{shared_server.url}{page}", src)).netloc == origin
            assert same_origin or integrity, f"{page} loads {src} unpinned"
        policy = response.headers.get("content-security-policy", "")
        assert "default-src 'none'" in policy, (page, policy)
        assert "script-src" not in policy or "'unsafe-inline'" not in policy, policy
        assert response.headers.get("x-content-type-options") == "nosniff"


def test_the_schema_page_lists_the_operations_and_names_the_document(
    shared_server: ServerProcess,
) -> None:
    page = httpx.get(f"{shared_server.url}/schema")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    parser = Scripts()
    parser.feed(page.text)
    assert parser.found == []  # no script at all, inline or not
    document = httpx.get(f"{shared_server.url}/schema/openapi.json")
    assert document.status_code == 200
    assert 'href="/schema/openapi.json"' in page.text
    for path in document.json()["paths"]:
        assert f"<code>{path}</code>" in page.text
