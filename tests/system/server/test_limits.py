"""Abuse limits answer with problem documents: requests per token per minute (429), request
bodies (413), sessions working at once per user (429)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

from tests.support.chronicle_server import ServerProcess

PROBLEM = "application/problem+json"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_rate_limit_counts_each_token_apart(serve: Callable[..., ServerProcess]) -> None:
    server = serve(server_rate_limit="5")
    greedy, patient = server.token("greedy"), server.token("patient")
    statuses = [
        httpx.get(f"{server.url}/api/me", headers=bearer(greedy)).status_code for _ in range(7)
    ]
    assert statuses[:5] == [200] * 5
    refused = httpx.get(f"{server.url}/api/me", headers=bearer(greedy))
    assert refused.status_code == 429
    assert refused.headers["content-type"] == PROBLEM
    assert refused.json()["status"] == 429
    # another token of the same client is not slowed by the first one's burst
    assert httpx.get(f"{server.url}/api/me", headers=bearer(patient)).status_code == 200
    # health probes are never limited
    assert all(httpx.get(f"{server.url}/health/live").status_code == 200 for _ in range(10))


def test_logins_are_limited_per_address(serve: Callable[..., ServerProcess]) -> None:
    server = serve(server_rate_limit="3")
    statuses = [
        httpx.post(f"{server.url}/api/login", json={"token": "chr_guess"}).status_code
        for _ in range(5)
    ]
    assert statuses[:3] == [401] * 3
    assert statuses[3:] == [429, 429]


def test_a_body_over_the_limit_is_refused_with_413(serve: Callable[..., ServerProcess]) -> None:
    server = serve(server_max_body_bytes="4096")
    token = server.token("writer")
    big = httpx.post(f"{server.url}/api/sessions", headers=bearer(token), json={"task": "x" * 5000})
    assert big.status_code == 413
    assert big.headers["content-type"] == PROBLEM
    small = httpx.post(f"{server.url}/api/sessions", headers=bearer(token), json={"task": "x"})
    assert small.status_code == 201, small.text


def test_a_user_may_have_only_so_many_sessions_working(
    serve: Callable[..., ServerProcess],
) -> None:
    # no worker runs here: every session created stays waiting to run, so it counts
    server = serve(server_max_active_sessions="2")
    busy, other = server.token("busy"), server.token("other")
    for _ in range(2):
        created = httpx.post(f"{server.url}/api/sessions", headers=bearer(busy), json={"task": "t"})
        assert created.status_code == 201
    third = httpx.post(f"{server.url}/api/sessions", headers=bearer(busy), json={"task": "t"})
    assert third.status_code == 429
    assert third.headers["content-type"] == PROBLEM
    assert "2 sessions" in third.json()["detail"]
    # the cap is per user: another user is not refused because of the first
    ok = httpx.post(f"{server.url}/api/sessions", headers=bearer(other), json={"task": "t"})
    assert ok.status_code == 201


def test_a_workspace_must_be_inside_a_configured_root(
    serve: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    roots = tmp_path / "repos"
    (roots / "project").mkdir(parents=True)
    (roots / "escape").symlink_to("/etc")
    server = serve(workspace_roots=str(roots))
    token = server.token("dev")

    def create(workspace: str) -> httpx.Response:
        return httpx.post(
            f"{server.url}/api/sessions",
            headers=bearer(token),
            json={"task": "t", "workspace": workspace},
        )

    for refused in ("/etc", str(roots / "escape"), str(roots / ".." / ".."), "relative/dir"):
        response = create(refused)
        assert response.status_code == 422, (refused, response.text)
        assert response.headers["content-type"] == PROBLEM
    accepted = create(str(roots / "project"))
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["workspace"] == str((roots / "project").resolve())


def test_requests_at_once_cannot_exceed_the_cap(serve: Callable[..., ServerProcess]) -> None:
    """Counted and reserved under one lock per user: without it, requests that arrive
    together all see a free place (a check-then-insert race) and all get through."""
    from concurrent.futures import ThreadPoolExecutor

    server = serve(server_max_active_sessions="2")
    token = server.token("racer")

    def create(_: int) -> int:
        return httpx.post(
            f"{server.url}/api/sessions", headers=bearer(token), json={"task": "t"}, timeout=60
        ).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = sorted(pool.map(create, range(8)))
    assert statuses == [201, 201] + [429] * 6


def test_model_calls_have_a_rate_limit_of_their_own(serve: Callable[..., ServerProcess]) -> None:
    """An agent's model calls (``/v1/...``) count in ``gateway_rate_limit``, apart from the
    API's ``server_rate_limit``: a replay that makes calls fast is not stopped by the API's."""
    server = serve(server_rate_limit="3", gateway_rate_limit="5")
    token = server.token("agent")
    models = [
        httpx.get(f"{server.url}/v1/models", headers=bearer(token)).status_code for _ in range(5)
    ]
    assert models == [200] * 5
    assert httpx.get(f"{server.url}/v1/models", headers=bearer(token)).status_code == 429
    # the API's own bucket is untouched by them, and has its own limit
    api = [httpx.get(f"{server.url}/api/me", headers=bearer(token)).status_code for _ in range(4)]
    assert api == [200, 200, 200, 429]
