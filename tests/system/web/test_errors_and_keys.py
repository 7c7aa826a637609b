"""What the API refuses is told on the page as a message (never a blank screen), and the
page is usable from the keyboard: j / k walk the sessions list, Enter opens a session, m
goes to the message box."""

from __future__ import annotations

from collections.abc import Callable

import httpx
from playwright.sync_api import Page, expect

from tests.support.browser import open_sign_in_link
from tests.support.chronicle_server import ServerProcess
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call


def test_a_refused_request_is_shown_as_a_message(
    server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(server.token("alice")))
    page.get_by_role("link", name="New session").first.click()
    page.get_by_label("Task").fill("work somewhere it may not")
    page.get_by_label("Workspace").fill("/etc")
    page.get_by_role("button", name="Start session").click()
    expect(page.get_by_role("alert")).to_contain_text("no existing workspace")
    expect(page.get_by_role("heading", name="New session")).to_be_visible()  # nothing lost
    expect(page.get_by_label("Task")).to_have_value("work somewhere it may not")

    page.goto("/#/sessions/00000000-0000-4000-8000-000000000000")
    # a not-found page and nothing else: no timeline, no live stream retried for ever
    expect(page.get_by_role("heading", name="No such session")).to_be_visible()
    expect(page.locator(".timeline, .connection")).to_have_count(0)


def test_the_keyboard_walks_the_list_and_opens_a_session(
    server: ServerProcess, fake_llm: FakeLlmServer, new_page: Callable[..., Page]
) -> None:
    fake_llm.script(*[Reply(tool_calls=[tool_call("finish", message="ok")]) for _ in range(2)])
    token = server.token("alice")
    made = [
        httpx.post(
            f"{server.url}/api/sessions",
            headers={"Authorization": f"Bearer {token}"},
            json={"task": f"task number {n}"},
        ).json()["id"]
        for n in range(2)
    ]
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(token))
    expect(page.locator("tbody tr")).to_have_count(2)
    page.keyboard.press("j")
    expect(page.get_by_role("link", name="task number 1")).to_be_focused()  # newest first
    page.keyboard.press("j")
    expect(page.get_by_role("link", name="task number 0")).to_be_focused()
    page.keyboard.press("k")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/#/sessions/{made[1]}")
    expect(page.locator(".timeline > li").first).to_contain_text("Session created")
    page.keyboard.press("j")
    created = page.locator(".timeline > li").first
    expect(created).to_be_focused()
    expect(created.locator("details")).not_to_have_attribute("open", "")
    page.keyboard.press("Enter")
    expect(created.locator("details")).to_have_attribute("open", "")
    page.keyboard.press("m")
    expect(page.get_by_label("Message to the agent")).to_be_focused()
