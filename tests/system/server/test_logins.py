"""Logins as an attacker and an operator meet them, against a real server and the real CLI:
a revoked token ends the browser logins made with it, a disabled, removed or demoted user
loses what it had on its next request (the server remembers Bearer tokens for a minute here),
sign-in links are one-time codes the page posts (never a token in a URL), a sign-in from
another site is refused, tokens expire by default, and guessing tokens is answered 429."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from tests.support.chronicle_server import ServerProcess, start_server
from tests.support.cli import chronicle

#: A minute: a change that waited for the cache to lapse would show.
CACHED = {"server_token_cache_seconds": "60"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def browser_login(server: ServerProcess, token: str) -> httpx.Client:
    """A client holding a browser login made with ``token``, as the page makes it."""
    client = httpx.Client(base_url=server.url)
    signed_in = client.post(
        "/api/login",
        json={"token": token},
        headers={"Origin": server.url, "Sec-Fetch-Site": "same-origin"},
    )
    assert signed_in.status_code == 200, signed_in.text
    return client


def token_id_of(server: ServerProcess, user: str) -> str:
    listed = chronicle("tokens", "list", env=server.env).stdout
    return next(line.split()[0] for line in listed.splitlines() if f" {user} " in line)


def cli(server: ServerProcess, *args: str) -> str:
    done = chronicle(*args, env=server.env)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_revoking_a_token_ends_the_browser_logins_made_with_it_at_once(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(**CACHED)
    token = server.token("mika")
    browser = browser_login(server, token)
    assert browser.get("/api/me").json()["user"] == "mika"
    other = server.token("mika")  # a second token of the same user, with its own login
    other_browser = browser_login(server, other)

    cli(server, "tokens", "revoke", token_id_of(server, "mika"))
    ended = browser.get("/api/me")
    assert ended.status_code == 401 and "log in again" in ended.json()["detail"]
    assert httpx.get(f"{server.url}/api/me", headers=bearer(token)).status_code == 401
    # the other token and its login are untouched
    assert other_browser.get("/api/me").status_code == 200
    assert httpx.get(f"{server.url}/api/me", headers=bearer(other)).status_code == 200


def test_a_revoke_holds_at_once_in_every_api_process(database_env: dict[str, str]) -> None:
    """Two API processes on one database, each remembering the token for a minute: revoked
    from the CLI (a third process), it is refused by both on their next request."""
    env = {**database_env, "CHRONICLE_SERVER_TOKEN_CACHE_SECONDS": "60"}
    first, second = start_server(env, "--role", "api"), start_server(env, "--role", "api")
    try:
        token = first.token("xena")
        for server in (first, second):
            for _ in range(3):
                assert httpx.get(f"{server.url}/api/me", headers=bearer(token)).status_code == 200
        cli(first, "tokens", "revoke", token_id_of(first, "xena"))
        for server in (first, second):
            assert httpx.get(f"{server.url}/api/me", headers=bearer(token)).status_code == 401
    finally:
        first.stop()
        second.stop()


def test_open_streams_end_when_their_credentials_stop_holding(
    serve: Callable[..., ServerProcess],
) -> None:
    """A stream is a request that lasts: an SSE stream on a token that is revoked, and a
    WebSocket on a browser login that is ended, are told so and closed."""
    server = serve()
    token = server.token("yuri")
    created = httpx.post(f"{server.url}/api/sessions", headers=bearer(token), json={"task": "hi"})
    assert created.status_code == 201, created.text
    path = f"/api/sessions/{created.json()['id']}/stream"
    browser = browser_login(server, server.token("yuri"))
    cookie = f"chronicle_session={browser.cookies['chronicle_session']}"
    with (
        httpx.stream("GET", server.url + path, headers=bearer(token), timeout=10) as sse,
        ws_connect(
            server.url.replace("http://", "ws://") + path,
            additional_headers={"Cookie": cookie, "Origin": server.url},
            open_timeout=30,
        ) as socket,
    ):
        assert sse.status_code == 200
        lines = sse.iter_lines()
        next(line for line in lines if line.startswith("id:"))  # the first event came
        assert json.loads(socket.recv(timeout=30))["seq"] == 1

        cli(server, "tokens", "revoke", token_id_of(server, "yuri"))
        started = time.monotonic()
        rest = list(lines)  # until the server ends the response
        assert "event: revoked" in rest and time.monotonic() - started < 5

        assert "ended 1 browser login" in cli(server, "users", "logout", "yuri")
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                message = json.loads(socket.recv(timeout=5))
                if message.get("type") == "revoked":
                    socket.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401


def test_disable_enable_remove_take_effect_on_the_next_request(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(**CACHED)
    token = server.token("noor")
    me = f"{server.url}/api/me"
    for _ in range(3):  # remembered by the server from here on
        assert httpx.get(me, headers=bearer(token)).status_code == 200
    browser = browser_login(server, token)

    assert "disabled" in cli(server, "users", "disable", "noor")
    assert httpx.get(me, headers=bearer(token)).status_code == 401
    assert browser.get("/api/me").status_code == 401
    again = httpx.post(f"{server.url}/api/login", json={"token": token})
    assert again.status_code == 401  # nor can it sign in anew
    assert "noor" in cli(server, "users", "list") and "disabled" in cli(server, "users", "list")

    cli(server, "users", "enable", "noor")
    assert httpx.get(me, headers=bearer(token)).status_code == 200
    assert browser.get("/api/me").status_code == 401  # its logins stay ended

    cli(server, "users", "remove", "noor")
    assert httpx.get(me, headers=bearer(token)).status_code == 401
    back = chronicle("users", "enable", "noor", env=server.env)
    assert back.returncode == 1 and "removed for good" in back.stderr
    assert "revoked" in cli(server, "tokens", "list")
    fresh = chronicle("tokens", "create", "noor", env=server.env)
    assert fresh.returncode == 1 and "removed for good" in fresh.stderr


def test_demote_and_promote_take_effect_on_the_next_request(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(**CACHED)
    admin = server.token("ines", admin=True)
    member = server.token("olav")
    session = httpx.post(
        f"{server.url}/api/sessions", headers=bearer(member), json={"task": "say hi"}
    )
    assert session.status_code in (200, 201), session.text
    theirs = f"{server.url}/api/sessions/{session.json()['id']}"
    # the session reads 404 to everyone until the projection has applied its creation
    deadline = time.monotonic() + 20
    while (seen := httpx.get(theirs, headers=bearer(admin))).status_code == 404:
        assert time.monotonic() < deadline, "the session was never projected"
        time.sleep(0.1)
    assert seen.status_code == 200, seen.text
    browser = browser_login(server, admin)
    assert browser.get("/api/me").json()["is_admin"] is True

    assert "plain user" in cli(server, "users", "demote", "ines")
    assert httpx.get(theirs, headers=bearer(admin)).status_code == 404
    assert httpx.get(f"{server.url}/api/me", headers=bearer(admin)).json()["is_admin"] is False
    assert browser.get("/api/me").json()["is_admin"] is False

    assert "an admin" in cli(server, "users", "promote", "ines")
    assert httpx.get(theirs, headers=bearer(admin)).status_code == 200


def test_a_users_logins_are_listed_and_ended_from_the_cli_and_by_an_admin(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve()
    token = server.token("pia")
    first, second = browser_login(server, token), browser_login(server, token)
    listed = cli(server, "users", "logins", "pia")
    assert len(re.findall(r"from 127\.0\.0\.1", listed)) == 2
    assert "ended 2 browser logins of pia" in cli(server, "users", "logout", "pia")
    assert first.get("/api/me").status_code == 401
    assert second.get("/api/me").status_code == 401
    assert httpx.get(f"{server.url}/api/me", headers=bearer(token)).status_code == 200

    admin = server.token("quinn", admin=True)
    third = browser_login(server, token)
    logins = httpx.get(f"{server.url}/api/users/pia/logins", headers=bearer(admin))
    assert logins.status_code == 200 and len(logins.json()) == 1
    member = httpx.get(f"{server.url}/api/users/pia/logins", headers=bearer(token))
    assert member.status_code == 403
    ended = httpx.post(f"{server.url}/api/users/pia/logout", headers=bearer(admin))
    assert ended.json() == {"user": "pia", "ended": 1}
    assert third.get("/api/me").status_code == 401


def test_a_sign_in_link_is_a_one_time_code_that_expires(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve()
    server.token("rosa")
    made = chronicle("login-link", "rosa", "--url", server.url, env=server.env)
    assert made.returncode == 0, made.stderr
    link = made.stdout.strip()
    assert link.startswith(f"{server.url}/login#code=") and "chr_" not in link
    code = link.partition("#code=")[2]
    with httpx.Client(base_url=server.url) as page:
        for _ in range(2):  # asking whom it signs in as uses nothing up, nor signs in
            peeked = page.post("/api/login/code/peek", json={"code": code})
            assert peeked.status_code == 200, peeked.text
            assert peeked.json()["user"] == "rosa" and peeked.json()["is_admin"] is False
            assert "chronicle_session" not in page.cookies
        used = page.post("/api/login/code", json={"code": code})
        assert used.status_code == 200 and used.json()["user"] == "rosa"
        assert page.get("/api/me").json()["user"] == "rosa"
    twice = httpx.post(f"{server.url}/api/login/code", json={"code": code})
    assert twice.status_code == 401 and "used or expired" in twice.json()["detail"]
    peek_used = httpx.post(f"{server.url}/api/login/code/peek", json={"code": code})
    assert peek_used.status_code == 401 and "used or expired" in peek_used.json()["detail"]

    short = {**server.env, "CHRONICLE_SERVER_LOGIN_CODE_MINUTES": "0.02"}  # 1.2 s
    late = chronicle("login-link", "rosa", "--url", server.url, env=short).stdout.strip()
    time.sleep(2)
    expired = httpx.post(f"{server.url}/api/login/code", json={"code": late.partition("=")[2]})
    assert expired.status_code == 401


def test_a_link_made_with_a_token_ends_with_it(serve: Callable[..., ServerProcess]) -> None:
    server = serve()
    server.token("sami")
    made = chronicle("tokens", "create", "sami", "--link", "--url", server.url, env=server.env)
    assert made.returncode == 0, made.stderr
    token, link = made.stdout.split()
    token_id = re.search(r"token (\S+) for sami", made.stderr).group(1)  # type: ignore[union-attr]
    with httpx.Client(base_url=server.url) as page:
        code = link.partition("#code=")[2]
        assert page.post("/api/login/code", json={"code": code}).status_code == 200
        assert page.get("/api/me").json()["user"] == "sami"
        assert httpx.get(f"{server.url}/api/me", headers=bearer(token)).status_code == 200
        cli(server, "tokens", "revoke", token_id)
        assert page.get("/api/me").status_code == 401


def test_the_old_token_link_signs_in_nobody(shared_server: ServerProcess) -> None:
    token = shared_server.token("tove")
    with httpx.Client(base_url=shared_server.url) as browser:
        page = browser.get(f"/login?token={token}")
        assert page.status_code == 410 and "no longer works" in page.text
        assert "chronicle_session" not in browser.cookies
        assert browser.get("/api/me").status_code == 401


def test_a_sign_in_from_another_site_is_refused(shared_server: ServerProcess) -> None:
    """What another site's page can make a browser send: a form (no JSON content type), a
    request whose Origin or Sec-Fetch-Site names that site."""
    token = shared_server.token("uma")
    url = f"{shared_server.url}/api/login"
    as_form = httpx.post(
        url,
        content=f'{{"token": "{token}", "x": "=y"}}',
        headers={"Content-Type": "text/plain", "Origin": "http://evil.example"},
    )
    assert as_form.status_code == 415 and "set-cookie" not in as_form.headers
    plain_form = httpx.post(
        url, content=f'{{"token": "{token}"}}', headers={"Content-Type": "text/plain"}
    )
    assert plain_form.status_code == 415
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ):
        refused = httpx.post(url, json={"token": token}, headers=headers)
        assert refused.status_code == 403, headers
        assert "set-cookie" not in refused.headers
        code_refused = httpx.post(f"{url}/code", json={"code": "chc_x"}, headers=headers)
        assert code_refused.status_code == 403, headers
        peek_refused = httpx.post(f"{url}/code/peek", json={"code": "chc_x"}, headers=headers)
        assert peek_refused.status_code == 403, headers
    own = httpx.post(
        url,
        json={"token": token},
        headers={"Origin": shared_server.url, "Sec-Fetch-Site": "same-origin"},
    )
    assert own.status_code == 200


def test_tokens_expire_in_90_days_unless_told_never(shared_server: ServerProcess) -> None:
    chronicle("users", "add", "vera", env=shared_server.env)
    made = chronicle("tokens", "create", "vera", env=shared_server.env)
    expected = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 90 * 86400))
    assert f"expires {expected}" in made.stderr
    forever = chronicle("tokens", "create", "vera", "--expires", "never", env=shared_server.env)
    assert forever.returncode == 0 and "never expires" in forever.stderr


def test_guessing_tokens_is_answered_429_and_a_good_token_is_not_counted(
    serve: Callable[..., ServerProcess],
) -> None:
    server = serve(server_auth_failures="20", server_rate_limit="100000")
    token = server.token("wim")
    with httpx.Client(base_url=server.url) as client:
        for _ in range(50):  # successes take nothing from the address's failures
            assert client.get("/api/me", headers=bearer(token)).status_code == 200
        started = time.monotonic()
        statuses = [
            client.get("/api/me", headers=bearer(f"chr_guess{n:039d}")).status_code
            for n in range(700)
        ]
        elapsed = time.monotonic() - started
        assert statuses[:20] == [401] * 20
        assert set(statuses[20:]) <= {401, 429}
        # 20 at once, then one more each 3 s as the address's failures refill (20 a minute)
        assert statuses.count(401) <= 20 + elapsed / 3 + 1, (statuses.count(401), elapsed)
        assert statuses.count(429) >= 600
        refused = client.get("/api/me", headers=bearer("chr_another_guess"))
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        login = client.post("/api/login", json={"token": "chr_guess"})
        assert login.status_code == 429
        code = client.post("/api/login/code", json={"code": "chc_guess"})
        assert code.status_code == 429
        peek = client.post("/api/login/code/peek", json={"code": "chc_guess"})
        assert peek.status_code == 429


def test_guessing_codes_by_peeking_spends_the_addresss_failures(
    serve: Callable[..., ServerProcess],
) -> None:
    """The peek answers a user's name for a live code: as an oracle for guessed codes it is
    limited as the exchange is, each refused guess counted against the address."""
    server = serve(server_auth_failures="3", server_rate_limit="100000")
    server.token("tess")
    link = chronicle("login-link", "tess", "--url", server.url, env=server.env).stdout.strip()
    with httpx.Client(base_url=server.url) as client:
        guesses = [
            client.post("/api/login/code/peek", json={"code": f"chc_guess{n}"}).status_code
            for n in range(5)
        ]
        assert guesses[:3] == [401] * 3 and guesses[3:] == [429, 429], guesses
        # spent: not even the right code is looked at until the failures refill
        right = client.post("/api/login/code/peek", json={"code": link.partition("#code=")[2]})
        assert right.status_code == 429
