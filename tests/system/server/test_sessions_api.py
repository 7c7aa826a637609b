"""The session routes over real HTTP: what creating and steering a session records (each
user-sourced event with its user), the list's filters and cursor pages, events pages, verify,
export; readiness; a clean SIGTERM."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable

import httpx

from tests.support.chronicle_server import ServerProcess


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def listed(server: ServerProcess, token: str, query: str = "") -> dict:
    return httpx.get(f"{server.url}/api/sessions?{query}", headers=bearer(token)).json()


def wait_listed(server: ServerProcess, token: str, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(listed(server, token, "limit=200")["sessions"]) < count:
        assert time.monotonic() < deadline, "the sessions were not listed in time"
        time.sleep(0.2)


def test_creating_and_steering_records_each_event_with_its_user(
    shared_server: ServerProcess,
) -> None:
    token = shared_server.token("carol")
    created = httpx.post(
        f"{shared_server.url}/api/sessions",
        headers=bearer(token),
        json={"task": "write hello.py\nthat prints hello", "limits": {"max_iterations": 7}},
    )
    assert created.status_code == 201, created.text
    session = created.json()
    assert session["title"] == "write hello.py" and session["max_iterations"] == 7
    assert session["user"] == "carol" and session["model"] == "openai/scripted"
    base = f"{shared_server.url}/api/sessions/{session['id']}"
    # in an order each applies in, whenever the worker's run gets to them: the message asks
    # for a run, which a pause pauses, a stop stops, a resume lets go on
    for path, body in (
        ("/messages", {"content": "also add a test"}),
        ("/pause", None),
        ("/stop", None),
        ("/resume", None),
    ):
        response = httpx.post(base + path, headers=bearer(token), json=body)
        assert response.status_code == 202, (path, response.text)
        if path != "/stop":  # a stop asks for a run when the pause was answered already
            assert response.json()["run_requested"] == (path in ("/messages", "/resume"))
    events = httpx.get(f"{base}/events", headers=bearer(token)).json()["events"]
    kinds = [(e["kind"], e["source"], e["payload"].get("user")) for e in events]
    assert kinds[0] == ("session.created", "system", "carol")
    assert ("message", "user", "carol") in kinds
    user_events = [e for e in events if e["source"] == "user"]
    assert [e["payload"].get("state") or e["payload"]["content"] for e in user_events] == [
        "write hello.py\nthat prints hello",
        "also add a test",
        "paused",
        "stopped",
        "running",
    ]
    assert all(e["payload"]["user"] == "carol" for e in user_events)
    config = events[0]["payload"]["config"]
    assert config["max_iterations"] == 7 and config["workspace"] == session["workspace"]
    assert "sk-not-used" not in json.dumps(events)  # the model key never enters the log
    assert "workspace.snapshot" in [e["kind"] for e in events]


def test_events_are_paged_by_seq(shared_server: ServerProcess) -> None:
    token = shared_server.token("dave")
    session = httpx.post(
        f"{shared_server.url}/api/sessions", headers=bearer(token), json={"task": "t"}
    ).json()["id"]
    for n in range(5):
        httpx.post(
            f"{shared_server.url}/api/sessions/{session}/messages",
            headers=bearer(token),
            json={"content": f"m{n}"},
        )
    seen: list[int] = []
    after = 0
    while True:
        page = httpx.get(
            f"{shared_server.url}/api/sessions/{session}/events?after_seq={after}&limit=2",
            headers=bearer(token),
        ).json()
        seen += [e["seq"] for e in page["events"]]
        if page["next_after_seq"] is None:
            break
        after = page["next_after_seq"]
    assert seen == list(range(1, page["last_seq"] + 1))
    assert len(seen) >= 8


def test_the_list_pages_by_cursor_and_filters(shared_server: ServerProcess) -> None:
    token = shared_server.token("erin")
    made = [
        httpx.post(
            f"{shared_server.url}/api/sessions", headers=bearer(token), json={"task": f"t{n}"}
        ).json()["id"]
        for n in range(5)
    ]
    wait_listed(shared_server, token, 5)
    seen: list[str] = []
    cursor = None
    while True:
        page = listed(shared_server, token, "limit=2" + (f"&cursor={cursor}" if cursor else ""))
        assert len(page["sessions"]) <= 2
        seen += [s["id"] for s in page["sessions"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(made))  # newest first, each once
    assert listed(shared_server, token, "model=openai/scripted")["sessions"]
    assert listed(shared_server, token, "model=other/model")["sessions"] == []
    assert listed(shared_server, token, "state=finished")["sessions"] == []
    bad = httpx.get(f"{shared_server.url}/api/sessions?state=bogus", headers=bearer(token))
    assert bad.status_code == 400 and bad.headers["content-type"] == "application/problem+json"
    one = httpx.get(f"{shared_server.url}/api/sessions/{made[0]}", headers=bearer(token))
    assert one.json()["title"] == "t0" and one.json()["events"] >= 2


def test_verify_and_export_match_the_command_line(shared_server: ServerProcess) -> None:
    from tests.support.cli import chronicle

    token = shared_server.token("frank")
    session = httpx.post(
        f"{shared_server.url}/api/sessions", headers=bearer(token), json={"task": "t"}
    ).json()["id"]
    # the server's worker runs it against no model: it ends in error at once; compare the
    # exports once it has ended, so that both read the same events
    deadline = time.monotonic() + 60
    while (
        httpx.get(f"{shared_server.url}/api/sessions/{session}", headers=bearer(token))
        .json()
        .get("state")
        != "error"
    ):
        assert time.monotonic() < deadline, "the session did not end"
        time.sleep(0.3)
    report = httpx.get(
        f"{shared_server.url}/api/sessions/{session}/verify", headers=bearer(token)
    ).json()
    assert report["ok"] is True and report["checked"] >= 2
    exported = httpx.get(
        f"{shared_server.url}/api/sessions/{session}/export", headers=bearer(token)
    )
    assert exported.headers["content-type"].startswith("application/x-ndjson")
    cli = chronicle("export", session, env=shared_server.env)
    assert cli.returncode == 0, cli.stderr
    assert exported.text == cli.stdout


def test_a_model_name_no_provider_answers_to_is_refused_at_creation(
    shared_server: ServerProcess,
) -> None:
    """Before: 201, and a session that failed at its first step saying the model "refused
    the request"."""
    token = shared_server.token("gina")
    refused = httpx.post(
        f"{shared_server.url}/api/sessions",
        headers=bearer(token),
        json={"task": "t", "model": "nosuchprovider/x"},
        timeout=60,  # the first request naming a model imports litellm
    )
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    detail = refused.json()["detail"]
    assert detail.startswith("no model provider is known for the model name 'nosuchprovider/x'")
    assert "openai/<name>" in detail  # how to name a model behind a base URL


def test_ready_reports_each_check_to_an_admin_only(shared_server: ServerProcess) -> None:
    ready = httpx.get(
        f"{shared_server.url}/health/ready",
        headers=bearer(shared_server.token("root", admin=True)),
    )
    body = ready.json()
    assert ready.status_code == 200, body
    checks = {check["name"]: check for check in body["checks"]}
    assert set(checks) == {
        "database",
        "writes",
        "migrations",
        "projection session_state",
        "workers",
    }
    assert all(check["ok"] for check in checks.values()), checks
    # anyone else (a probe, a member, a wrong token) learns ready or not, nothing about the
    # revision, the workers' slots or the projections' lag
    member = bearer(shared_server.token("member"))
    for headers in ({}, member, bearer("chr_not_a_token"), {"Authorization": "Basic eA=="}):
        short = httpx.get(f"{shared_server.url}/health/ready", headers=headers)
        assert short.status_code == 200
        assert short.json() == {"status": "ready"}, short.text


def test_sigterm_stops_the_server_cleanly(serve: Callable[..., ServerProcess]) -> None:
    server = serve()
    assert httpx.get(f"{server.url}/health/live").status_code == 200
    started = time.monotonic()
    assert server.stop(signal.SIGTERM) == 0
    assert time.monotonic() - started < 15
    rest = server.rest_of_output()
    assert "Traceback" not in rest, rest


def test_an_api_only_server_is_not_ready_without_a_projections_runner(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve("--role", "api")
    assert httpx.get(f"{server.url}/health/ready").json() == {"status": "not ready"}
    admin = bearer(server.token("root", admin=True))
    ready = httpx.get(f"{server.url}/health/ready", headers=admin)
    assert ready.status_code == 503
    failed = [c["name"] for c in ready.json()["checks"] if not c["ok"]]
    assert failed == ["projection session_state", "workers"]
