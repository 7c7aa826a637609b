"""Signing in to the web page: a token typed in, the ``/login?token=`` link ``./dev up``
prints (the token leaves the address bar), a wrong token told as a message, sign-out; the
page's own files are served without credentials while the API behind them still needs one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from tests.support.browser import screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess


def test_a_token_signs_in_and_a_wrong_one_is_told(
    server: ServerProcess, new_page: Callable[..., Page], screenshots: Path
) -> None:
    token = server.token("alice")
    page = new_page()
    page.goto("/")
    expect(page.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()
    screenshot_at_both_widths(page, "sign-in", screenshots)

    page.get_by_label("API token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("unknown, revoked or expired")

    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    expect(page.locator("#who")).to_have_text("alice")
    expect(page.get_by_text("No sessions yet")).to_be_visible()
    screenshot_at_both_widths(page, "sessions-empty", screenshots)
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["chronicle_session"]["httpOnly"] is True
    assert cookies["chronicle_session"]["value"] != token  # a login token of its own

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()


def test_the_login_link_signs_in_and_drops_the_token_from_the_address(
    server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    token = server.token("bob", admin=True)
    page = new_page()
    page.goto(f"/login?token={token}")
    expect(page.locator("#who")).to_have_text("bob (admin)")
    assert page.url == server.url + "/"
    assert token not in page.evaluate("history.length + location.href")

    stale = new_page()
    stale.goto("/login?token=revoked-or-made-up")
    expect(stale.get_by_role("alert")).to_contain_text("That sign-in link did not work")


def test_the_page_is_public_and_the_api_behind_it_is_not(server: ServerProcess) -> None:
    page = httpx.get(f"{server.url}/")
    assert page.status_code == 200 and "<title>Chronicle</title>" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    script = httpx.get(f"{server.url}/web/main.js")
    assert script.status_code == 200
    assert "javascript" in script.headers["content-type"]
    assert httpx.get(f"{server.url}/api/sessions").status_code == 401
    assert httpx.get(f"{server.url}/web/../app.py").status_code == 404
