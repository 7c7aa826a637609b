"""Signing in to the web page: a token typed in, a one-time sign-in link (``/login#code=``,
what ``./dev up`` and ``chronicle login-link`` print: the code leaves the address bar and works
once), a wrong token told as a message, sign-out, and a revoked token ending the page's login;
the page's own files are served without credentials while the API behind them still needs
one."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from tests.support.browser import open_sign_in_link, screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess
from tests.support.cli import chronicle
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call


def test_a_token_signs_in_and_a_wrong_one_is_told(
    server: ServerProcess, new_page: Callable[..., Page], screenshots: Path
) -> None:
    token = server.token("alice")
    page = new_page()
    page.goto("/")
    expect(page.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()
    # nothing to navigate to, nobody to sign out, before signing in
    expect(page.get_by_role("navigation", name="Main")).to_be_hidden()
    expect(page.get_by_role("button", name="Sign out")).to_be_hidden()
    screenshot_at_both_widths(page, "sign-in", screenshots)

    page.get_by_label("API token").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("unknown, revoked or expired")

    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    expect(page.locator("#who")).to_have_text("alice")
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    expect(page.get_by_text("No sessions yet")).to_be_visible()
    screenshot_at_both_widths(page, "sessions-empty", screenshots)
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["chronicle_session"]["httpOnly"] is True
    assert cookies["chronicle_session"]["value"] != token  # a login token of its own

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_be_hidden()
    page.reload()
    expect(page.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()


def test_a_sign_in_link_signs_in_once_and_leaves_the_address(
    server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    token = server.token("bob", admin=True)
    link = server.sign_in_path(token)
    assert link.startswith("/login#code=") and token not in link
    page = new_page()
    page.goto(link)
    expect(page.get_by_role("heading", name="Sign in as bob?")).to_be_visible()
    expect(page.locator("form strong")).to_have_text("bob (admin)")
    assert link.partition("=")[2] not in page.evaluate("location.href")

    # naming the user used nothing up: the link asks again in another browser, and works
    # in the first once its person says so
    other = new_page()
    other.goto(link)
    expect(other.get_by_role("heading", name="Sign in as bob?")).to_be_visible()
    other.get_by_role("button", name="Cancel").click()
    expect(other.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()
    page.get_by_role("button", name="Sign in as bob").click()
    expect(page.locator("#who")).to_have_text("bob (admin)")
    assert page.url == server.url + "/"
    assert link.partition("=")[2] not in page.evaluate("location.href")

    again = new_page()
    open_sign_in_link(again, link)  # the same link in another browser: used already
    expect(again.get_by_role("alert")).to_contain_text("That sign-in link did not work")
    expect(again.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()
    expect(again.get_by_role("button", name=re.compile("^Sign in as"))).to_have_count(0)


def test_a_wrong_sign_in_code_is_told_before_anything_is_asked(
    server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    page = new_page()
    page.goto("/login#code=chc_" + "x" * 43)
    expect(page.get_by_role("alert")).to_contain_text("That sign-in link did not work")
    expect(page.get_by_role("alert")).to_contain_text("unknown, used or expired")
    expect(page.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()
    assert not [c for c in page.context.cookies() if c["name"] == "chronicle_session"]


def test_revoking_the_token_signs_the_page_out_on_its_next_request(
    server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    token = server.token("carl")
    page = new_page()
    page.goto("/")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#who")).to_have_text("carl")
    listed = chronicle("tokens", "list", env=server.env).stdout
    token_id = next(line.split()[0] for line in listed.splitlines() if " carl " in line)
    assert chronicle("tokens", "revoke", token_id, env=server.env).returncode == 0
    page.reload()
    expect(page.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible()


def test_ending_a_users_logins_signs_out_an_open_session_page(
    server: ServerProcess, fake_llm: FakeLlmServer, new_page: Callable[..., Page]
) -> None:
    """The session page's live stream is a request that lasts: when the user's logins are
    ended it is told so, and the page goes back to the sign-in form by itself."""
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="all done")]))
    token = server.token("dana")
    session = httpx.post(
        f"{server.url}/api/sessions",
        headers={"Authorization": f"Bearer {token}"},
        json={"task": "finish"},
    ).json()["id"]
    page = new_page()
    page.goto("/")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#who")).to_have_text("dana")
    page.goto(f"/#/sessions/{session}")
    expect(page.locator(".connection")).to_have_text("live")
    ended = chronicle("users", "logout", "dana", env=server.env)
    assert ended.returncode == 0 and "ended 1 browser login" in ended.stdout, ended.stderr
    expect(page.get_by_role("heading", name="Sign in to Chronicle")).to_be_visible(timeout=10_000)


def test_the_page_is_public_and_the_api_behind_it_is_not(server: ServerProcess) -> None:
    page = httpx.get(f"{server.url}/")
    assert page.status_code == 200 and "<title>Chronicle</title>" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    script = httpx.get(f"{server.url}/web/main.js")
    assert script.status_code == 200
    assert "javascript" in script.headers["content-type"]
    assert httpx.get(f"{server.url}/api/sessions").status_code == 401
    assert httpx.get(f"{server.url}/web/../app.py").status_code == 404
    # an icon, not a 404 on every page: the page names it, and /favicon.ico leads to it
    icon = httpx.get(f"{server.url}/favicon.ico", follow_redirects=True)
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert 'rel="icon" href="/web/favicon.svg"' in page.text
