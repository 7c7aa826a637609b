"""Nobody reads or steers another user's session: every route of the OpenAPI document that
names a session answers another user 404 (as for a session that does not exist), and the
list shows them none of it; an admin sees every session."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.support.chronicle_server import ServerProcess

SECRET_TASK = "fix the bug in payroll.py; the salary table is confidential"
#: A body for every route that takes one (the others ignore it).
BODIES = {
    "/messages": {"content": "hello from the other user"},
    "/replays": {},
    "/forks": {"at_seq": 2},
    "/playground": {},
    "/annotations": {"label": "reviewed"},
    "/redactions": {"seq": 1, "reason": "isolation"},
}
#: Routes whose answer to the owner depends on the session: theirs is not a replay, its seq 1
#: is no model call, and once messaged mid-run (above) it cannot be replayed (the statuses,
#: and what the detail says instead of "not yours").
OWNER_EXPECTS = {
    "/api/sessions/{session_id}/replay-result": ({404}, "is not a replay"),
    "/api/sessions/{session_id}/model-calls/{seq}": ({404}, "no model call at seq 1"),
    "/api/sessions/{session_id}/model-calls/{seq}/playground": ({404}, "no model call at seq 1"),
    "/api/sessions/{session_id}/replays": ({202, 422}, ""),
    "/api/sessions/{session_id}/redactions": ({403}, "only an admin may redact"),
}

#: Routes that steer the session, which answer the owner 409 where its state rules them out.
STEERING = ("/messages", "/pause", "/resume", "/stop")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def session_routes(server: ServerProcess) -> list[tuple[str, str]]:
    """Every (method, path) of the OpenAPI document that names a session."""
    schema = httpx.get(f"{server.url}/schema/openapi.json").json()
    return [
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        if "{session_id}" in path
        for method in operations
    ]


def call(server: ServerProcess, token: str, method: str, path: str, session: str) -> httpx.Response:
    body = next((b for suffix, b in BODIES.items() if path.endswith(suffix)), None)
    return httpx.request(
        method,
        server.url + path.replace("{session_id}", session).replace("{seq}", "1"),
        headers=bearer(token),
        json=body,
        timeout=30,
    )


@pytest.fixture(scope="module")
def alice_session(shared_server: ServerProcess) -> tuple[str, str]:
    alice = shared_server.token("alice")
    created = httpx.post(
        f"{shared_server.url}/api/sessions", headers=bearer(alice), json={"task": SECRET_TASK}
    )
    assert created.status_code == 201, created.text
    return alice, created.json()["id"]


def test_another_user_gets_404_on_every_session_route(
    shared_server: ServerProcess, alice_session: tuple[str, str]
) -> None:
    alice, session = alice_session
    mallory = shared_server.token("mallory")
    routes = session_routes(shared_server)
    # get, events, verify, export, message, pause, resume, stop, replays, replay-result, forks,
    # model-calls, playground, playground-runs
    assert len(routes) >= 14, routes

    def user_events() -> list[dict]:
        """What users sent to the session (the server's worker may add the agent's)."""
        page = httpx.get(
            f"{shared_server.url}/api/sessions/{session}/events?limit=1000", headers=bearer(alice)
        ).json()
        return [e for e in page["events"] if e["source"] == "user" or e["payload"].get("user")]

    before = user_events()
    for method, path in routes:
        response = call(shared_server, mallory, method, path, session)
        assert response.status_code == 404, (method, path, response.status_code, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert "payroll" not in response.text and "alice" not in response.text
    assert user_events() == before  # mallory's posts recorded nothing


def test_the_owner_reaches_every_session_route(
    shared_server: ServerProcess, alice_session: tuple[str, str]
) -> None:
    """The 404s above are the access rule, not broken routes."""
    alice, session = alice_session
    for method, path in session_routes(shared_server):
        response = call(shared_server, alice, method, path, session)
        if path in OWNER_EXPECTS:
            statuses, detail = OWNER_EXPECTS[path]
            assert response.status_code in statuses, (path, response.text)
            assert detail in response.text and "not yours" not in response.text
            continue
        if path.endswith(STEERING) and response.status_code == 409:
            # the session's model is unreachable: it may have ended in error by now, and
            # steering then says what its state is (the route was reached, the access allowed)
            assert re.search(r" is [a-z ]+; \w+ applies only to ", response.text), (
                path,
                response.text,
            )
            continue
        if path == "/api/sessions/{session_id}" and response.status_code == 404:
            # listed once the projection has applied the session; wait for it
            response = _eventually_listed(shared_server, alice, session)
        assert response.status_code < 300, (method, path, response.text)


def _eventually_listed(server: ServerProcess, token: str, session: str) -> httpx.Response:
    import time

    deadline = time.monotonic() + 20
    while True:
        response = httpx.get(f"{server.url}/api/sessions/{session}", headers=bearer(token))
        if response.status_code != 404 or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


def test_a_session_that_does_not_exist_looks_the_same_as_another_users(
    shared_server: ServerProcess, alice_session: tuple[str, str]
) -> None:
    _, session = alice_session
    mallory = shared_server.token("mallory")
    missing = "00000000-0000-4000-8000-000000000000"
    for method, path in session_routes(shared_server):
        theirs = call(shared_server, mallory, method, path, session)
        nobodys = call(shared_server, mallory, method, path, missing)
        assert theirs.status_code == nobodys.status_code == 404
        assert re.sub(r"[0-9a-f-]{36}", "ID", theirs.text) == re.sub(
            r"[0-9a-f-]{36}", "ID", nobodys.text
        )


def test_the_list_shows_a_user_only_their_own_and_an_admin_all(
    shared_server: ServerProcess, alice_session: tuple[str, str]
) -> None:
    alice, session = alice_session
    _eventually_listed(shared_server, alice, session)
    mallory = shared_server.token("mallory")
    own = httpx.post(
        f"{shared_server.url}/api/sessions", headers=bearer(mallory), json={"task": "mine"}
    ).json()["id"]
    admin = shared_server.token("root", admin=True)
    _eventually_listed(shared_server, admin, own)

    def listed(token: str) -> set[str]:
        page = httpx.get(f"{shared_server.url}/api/sessions?limit=200", headers=bearer(token))
        return {s["id"] for s in page.json()["sessions"]}

    assert session not in listed(mallory) and own in listed(mallory)
    assert session in listed(alice) and own not in listed(alice)
    assert {session, own} <= listed(admin)
    for method, path in session_routes(shared_server):
        if method == "GET" and path not in OWNER_EXPECTS:
            assert call(shared_server, admin, method, path, session).status_code == 200, path
