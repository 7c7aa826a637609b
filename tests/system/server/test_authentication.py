"""Every API route needs a live token, by Bearer header or by a login's cookie, and a cookie
request that changes something needs the login's CSRF token too."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle

PROBLEM = "application/problem+json"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_without_credentials_every_api_route_is_401_with_a_problem(
    shared_server: ServerProcess,
) -> None:
    schema = httpx.get(f"{shared_server.url}/schema/openapi.json").json()
    checked = 0
    for path, operations in schema["paths"].items():
        if path.startswith("/health/") or path in (
            "/api/login",
            "/api/login/code",
            "/api/login/code/peek",
        ):
            continue
        for method in operations:
            url = shared_server.url + path.replace(
                "{session_id}", "00000000-0000-0000-0000-000000000001"
            ).replace("{seq}", "1")  # an int path parameter: a literal would match no route
            response = httpx.request(method, url, json={})
            assert response.status_code == 401, (method, path, response.text)
            assert response.headers["content-type"] == PROBLEM
            assert response.headers["www-authenticate"].startswith("Bearer")
            checked += 1
    assert checked >= 6  # every protected route of the document was tried


def test_public_routes_need_no_token(shared_server: ServerProcess) -> None:
    assert httpx.get(f"{shared_server.url}/health/live").json() == {"status": "ok"}
    assert httpx.get(f"{shared_server.url}/schema/openapi.json").status_code == 200


def test_an_unknown_malformed_or_revoked_token_is_refused(shared_server: ServerProcess) -> None:
    url = f"{shared_server.url}/api/me"
    token = shared_server.token("revoked-user")
    assert httpx.get(url, headers=bearer(token)).json()["user"] == "revoked-user"
    for headers in (
        bearer(token + "x"),
        bearer("chr_" + "A" * 43),
        {"Authorization": f"Basic {token}"},
        {"Authorization": token},
    ):
        response = httpx.get(url, headers=headers)
        assert response.status_code == 401, headers
        assert response.headers["content-type"] == PROBLEM
    listed = chronicle("tokens", "list", env=shared_server.env).stdout
    token_id = next(line.split()[0] for line in listed.splitlines() if "revoked-user" in line)
    assert token not in listed  # the list never shows a token
    assert chronicle("tokens", "revoke", token_id, env=shared_server.env).returncode == 0
    # the server remembers a live token for server_token_cache_seconds (5 by default)
    refused = _refused_within(url, token, CACHE_BOUND_DEFAULT)
    assert "revoked" in refused.json()["detail"]


#: The default server_token_cache_seconds and a second's margin for the request itself.
CACHE_BOUND_DEFAULT = 5.0 + 1.0


def _refused_within(url: str, token: str, seconds: float) -> httpx.Response:
    """The first 401 for the token, which must come within ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        response = httpx.get(url, headers=bearer(token))
        if response.status_code == 401:
            return response
        assert response.status_code == 200, response.text
        assert time.monotonic() < deadline, f"a revoked token still works after {seconds} s"
        time.sleep(0.05)


def test_a_revoked_token_stops_working_at_once_though_the_cache_remembers_it(
    serve: Callable[..., ServerProcess],
) -> None:
    """A live Bearer token is remembered (here for a minute), yet revoked by another process
    it is refused on its next request: the revocation's notification makes the server forget
    every token it remembers."""
    server = serve(server_token_cache_seconds="60")
    url = f"{server.url}/api/me"
    token = server.token("cached-user")
    for _ in range(3):
        assert httpx.get(url, headers=bearer(token)).status_code == 200  # now remembered
    listed = chronicle("tokens", "list", env=server.env).stdout
    token_id = next(line.split()[0] for line in listed.splitlines() if "cached-user" in line)
    assert chronicle("tokens", "revoke", token_id, env=server.env).returncode == 0
    refused = httpx.get(url, headers=bearer(token))
    assert refused.status_code == 401, refused.text
    assert "revoked" in refused.json()["detail"]
    # once refused it stays refused: a revoked token is never remembered
    for _ in range(5):
        assert httpx.get(url, headers=bearer(token)).status_code == 401


def test_without_the_token_cache_a_revoke_takes_effect_at_once(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(server_token_cache_seconds="0")
    url = f"{server.url}/api/me"
    token = server.token("uncached-user")
    assert httpx.get(url, headers=bearer(token)).status_code == 200
    listed = chronicle("tokens", "list", env=server.env).stdout
    token_id = next(line.split()[0] for line in listed.splitlines() if "uncached-user" in line)
    assert chronicle("tokens", "revoke", token_id, env=server.env).returncode == 0
    assert httpx.get(url, headers=bearer(token)).status_code == 401


def test_a_login_sets_a_strict_httponly_cookie_and_a_csrf_token(
    shared_server: ServerProcess,
) -> None:
    token = shared_server.token("browser-user")
    login = httpx.post(f"{shared_server.url}/api/login", json={"token": token})
    assert login.status_code == 200
    cookies = {
        header.split("=", 1)[0]: header.lower() for header in login.headers.get_list("set-cookie")
    }
    assert "httponly" in cookies["chronicle_session"]
    assert "samesite=strict" in cookies["chronicle_session"]
    assert "samesite=strict" in cookies["chronicle_csrf"]
    assert "httponly" not in cookies["chronicle_csrf"]  # the page's script reads it
    session_cookie = login.cookies["chronicle_session"]
    assert session_cookie != token  # a login of its own, never the API token itself
    csrf = login.json()["csrf_token"]
    assert login.cookies["chronicle_csrf"] == csrf

    with httpx.Client(base_url=shared_server.url) as browser:
        browser.cookies.set("chronicle_session", session_cookie)
        assert browser.get("/api/me").json()["user"] == "browser-user"
        # an unsafe request with the cookie alone (what another site can make a browser send)
        forged = browser.post("/api/logout")
        assert forged.status_code == 403
        assert forged.headers["content-type"] == PROBLEM
        wrong = browser.post("/api/logout", headers={"X-CSRF-Token": "0" * 64})
        assert wrong.status_code == 403
        # another login's CSRF token does not fit this cookie
        other = httpx.post(f"{shared_server.url}/api/login", json={"token": token}).json()
        assert (
            browser.post("/api/logout", headers={"X-CSRF-Token": other["csrf_token"]}).status_code
            == 403
        )
        assert browser.get("/api/me").status_code == 200  # still logged in: nothing happened
        out = browser.post("/api/logout", headers={"X-CSRF-Token": csrf})
        assert out.status_code == 200
        browser.cookies.set("chronicle_session", session_cookie)  # replaying the old cookie
        assert browser.get("/api/me").status_code == 401
    # the API token the login was made with still works: logout ended the browser's login only
    assert httpx.get(f"{shared_server.url}/api/me", headers=bearer(token)).status_code == 200


def test_a_bearer_request_needs_no_csrf_token(shared_server: ServerProcess) -> None:
    token = shared_server.token("script-user")
    response = httpx.post(f"{shared_server.url}/api/logout", headers=bearer(token))
    assert response.status_code == 200


def test_a_login_with_a_bad_token_is_refused(shared_server: ServerProcess) -> None:
    response = httpx.post(f"{shared_server.url}/api/login", json={"token": "chr_nope"})
    assert response.status_code == 401
    assert response.headers["content-type"] == PROBLEM
    assert "set-cookie" not in response.headers
    malformed = httpx.post(f"{shared_server.url}/api/login", json={"tok": 1})
    assert malformed.status_code == 400
    assert malformed.json()["errors"]
