"""Login CSRF, as another site attempts it in a real browser: a page served from another
origin (a plain ``http.server`` on another port) points an image and a navigation at
``/login?token=<the attacker's token>`` and auto-submits forms to ``POST /api/login``, hoping
to sign the visitor into the attacker's account. None of it may sign the browser in."""

from __future__ import annotations

import html
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.support.chronicle_server import ServerProcess


class AttackerSite:
    """Pages served from ``http://127.0.0.1:<another port>``: another origin than the server."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path, "not here").encode()
                self.send_response(200 if self.path in pages else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def attacker() -> Iterator[AttackerSite]:
    site = AttackerSite()
    try:
        yield site
    finally:
        site.close()


def _not_signed_in(page: Page, server: ServerProcess) -> None:
    assert not [c for c in page.context.cookies() if c["name"] == "chronicle_session"]
    page.goto(server.url + "/")
    expect(page.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()


def test_another_sites_page_cannot_sign_the_visitor_in(
    server: ServerProcess, attacker: AttackerSite, new_page: Callable[..., Page]
) -> None:
    token = server.token("mallory")  # the attacker's own account
    link = html.escape(f"{server.url}/login?token={token}")
    form_body = html.escape(json.dumps({"token": token, "pad": ""})[:-2])
    attacker.pages["/image"] = f'<img src="{link}">'
    attacker.pages["/navigate"] = f"<script>location.href = {json.dumps(link)};</script>"
    attacker.pages["/form-text"] = (
        f'<form method="post" action="{server.url}/api/login" enctype="text/plain">'
        f'<input type="hidden" name="{form_body}" value="&quot;}}"></form>'
        "<script>document.forms[0].submit();</script>"
    )
    attacker.pages["/form-urlencoded"] = (
        f'<form method="post" action="{server.url}/api/login">'
        f'<input type="hidden" name="token" value="{token}"></form>'
        "<script>document.forms[0].submit();</script>"
    )
    attacker.pages["/fetch"] = (
        "<script>fetch("
        f"{json.dumps(server.url + '/api/login')}, {{method: 'POST', mode: 'no-cors', "
        f"credentials: 'include', headers: {{'Content-Type': 'text/plain'}}, "
        f"body: {json.dumps(json.dumps({'token': token}))}}});</script>"
    )
    for path in attacker.pages:
        victim = new_page()
        victim.goto(attacker.url + path)
        victim.wait_for_load_state("networkidle")
        victim.wait_for_timeout(500)  # the page's own script, had it run, posts the token
        _not_signed_in(victim, server)
        victim.context.clear_cookies()


def test_the_old_link_form_tells_what_changed(
    server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    page = new_page()
    page.goto(f"/login?token={server.token('nina')}")
    expect(page.get_by_role("heading", name="This sign-in link no longer works")).to_be_visible()
    _not_signed_in(page, server)


def test_another_site_opening_a_sign_in_link_signs_nobody_in(
    server: ServerProcess, attacker: AttackerSite, new_page: Callable[..., Page]
) -> None:
    """The link form moved the code into the fragment, which another site can still navigate
    a visitor to (a link, a pop-up closed at once): the page must not use it by itself, or
    the visitor lands in the attacker's account (a fresh browser) or leaves their own (one
    signed in already); and it must say whose account the link is for, or a visitor who
    presses the button lands there all the same."""
    link = server.url + server.sign_in_path(server.token("mallory"))
    attacker.pages["/navigate"] = f"<script>location.href = {json.dumps(link)};</script>"
    victim = new_page()
    victim.goto(attacker.url + "/navigate")
    expect(victim.get_by_role("heading", name="Sign in as mallory?")).to_be_visible()
    expect(victim.get_by_role("button", name="Sign in as mallory")).to_be_visible()
    victim.wait_for_timeout(500)
    assert not [c for c in victim.context.cookies() if c["name"] == "chronicle_session"]

    # a visitor signed in as themselves is told whose account the link is for, and stays
    # themselves on declining
    signed_in = new_page()
    signed_in.goto("/")
    signed_in.get_by_label("API token").fill(server.token("alice"))
    signed_in.get_by_role("button", name="Sign in").click()
    expect(signed_in.locator("#who")).to_have_text("alice")
    attacker.pages["/navigate"] = (
        "<script>location.href = "
        f"{json.dumps(server.url + server.sign_in_path(server.token('mallory')))};</script>"
    )
    signed_in.goto(attacker.url + "/navigate")
    expect(signed_in.get_by_role("heading", name="Sign in as mallory?")).to_be_visible()
    expect(signed_in.get_by_role("alert")).to_have_text(
        "You are signed in as alice; this link signs you in as mallory instead."
    )
    signed_in.wait_for_timeout(500)
    me = signed_in.evaluate("fetch('/api/me').then((r) => r.json())")
    assert me["user"] == "alice"
    signed_in.get_by_role("button", name="Cancel").click()
    expect(signed_in.locator("#who")).to_have_text("alice")
    signed_in.reload()
    expect(signed_in.locator("#who")).to_have_text("alice")


def test_another_site_cannot_ask_whom_a_code_signs_in_as(
    server: ServerProcess, attacker: AttackerSite, new_page: Callable[..., Page]
) -> None:
    """The peek is the page's own, as the exchange is: a cross-site form or fetch learns
    nothing of a code (and cannot use the peek to test guesses from the visitor's browser)."""
    code = server.sign_in_path(server.token("nora")).partition("#code=")[2]
    url = json.dumps(server.url + "/api/login/code/peek")
    attacker.pages["/peek"] = (
        f"<script>window.answer = fetch({url}, {{method: 'POST', "
        "headers: {'Content-Type': 'application/json'}, "
        f"body: JSON.stringify({{code: {json.dumps(code)}}})}})"
        ".then((r) => r.status + ' ' + r.type, (e) => 'refused: ' + e.message);</script>"
    )
    page = new_page()
    page.goto(attacker.url + "/peek")
    answer = page.evaluate("window.answer")
    assert answer.startswith("refused"), answer  # no CORS: the browser hides any answer
    sent = httpx.post(
        f"{server.url}/api/login/code/peek",
        json={"code": code},
        headers={"Origin": attacker.url, "Sec-Fetch-Site": "same-site"},
    )
    assert sent.status_code == 403, sent.text
    form = httpx.post(  # what an HTML form (text/plain) can send that reads as JSON
        f"{server.url}/api/login/code/peek",
        content=json.dumps({"code": code}),
        headers={"Content-Type": "text/plain"},
    )
    assert form.status_code == 415, form.text


def test_a_login_cookie_another_port_of_the_host_sets_is_not_the_pages(
    server: ServerProcess, attacker: AttackerSite, new_page: Callable[..., Page]
) -> None:
    """Cookies are the host's, whatever the port: a page on another port of the same host (the
    attacker's site here, a sibling subdomain's ``Domain`` cookie elsewhere) can set the
    ``chronicle_session`` cookie of a browser login the attacker made for its own account
    (and the readable CSRF cookie beside it). The page must not then act as the attacker's:
    it signs in with what only it holds (its origin's storage, ports apart)."""
    made = httpx.post(f"{server.url}/api/login", json={"token": server.token("mallory")})
    assert made.status_code == 200, made.text
    cookie, csrf = made.cookies["chronicle_session"], made.json()["csrf_token"]
    attacker.pages["/toss"] = (
        "<script>"
        f"document.cookie = 'chronicle_session={cookie}; path=/; SameSite=Strict';"
        f"document.cookie = 'chronicle_csrf={csrf}; path=/; SameSite=Strict';"
        "</script>tossed"
    )
    victim = new_page()
    victim.goto(attacker.url + "/toss")
    assert any(c["name"] == "chronicle_session" for c in victim.context.cookies(server.url))
    victim.goto(server.url + "/")
    expect(victim.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()
    assert victim.locator("#who").text_content() == ""
    # nor can it write as the attacker: the CSRF value is the page's, not the cookie's
    status = victim.evaluate(
        "fetch('/api/sessions', {method: 'POST', headers: {'Content-Type': 'application/json',"
        " 'X-CSRF-Token': localStorage.getItem('chronicle_csrf') || ''},"
        " body: JSON.stringify({task: 'typed by the victim'})}).then((r) => r.status)"
    )
    assert status in (401, 403)
