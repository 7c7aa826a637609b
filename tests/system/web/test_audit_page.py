"""The audit log page (#/audit) in a real browser: an admin sees who signed in from where and
whose session was read, with the chain checked; a member has no link to it and is told it is
not theirs (the API answers them 403)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
from playwright.sync_api import Page, expect

from tests.support.chronicle_server import ServerProcess, wait_until_run_ended
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call


def sign_in(page: Page, token: str) -> None:
    page.goto("/")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def test_an_admin_reads_the_audit_log_and_a_member_cannot(
    server: ServerProcess, new_page: Callable[..., Page], fake_llm: FakeLlmServer
) -> None:
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="counted")]))
    member = server.token("mia")
    admin = server.token("root", admin=True)
    created = httpx.post(
        f"{server.url}/api/sessions",
        headers={"Authorization": f"Bearer {member}"},
        json={"task": "count the lines"},
    )
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    wait_until_run_ended(server.url, {"Authorization": f"Bearer {member}"}, session)

    page = new_page()
    sign_in(page, member)
    expect(page.locator("#audit-link")).to_be_hidden()
    page.goto("/#/audit")
    expect(page.get_by_text("for admins only")).to_be_visible()

    page = new_page()
    sign_in(page, admin)
    page.goto(f"/#/sessions/{session}")  # an admin's read of mia's session
    expect(page.get_by_text("count the lines").first).to_be_visible()
    page.get_by_role("link", name="Audit").click()
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("Hash chain intact")
    rows = page.locator("table.audit tbody tr")
    expect(rows.filter(has_text="mia").filter(has_text="signed in")).to_have_count(1)
    expect(rows.filter(has_text=f"read session {session} of mia")).to_have_count(1)
    expect(rows.filter(has_text="root").filter(has_text="127.0.0.1").first).to_be_visible()
    expect(rows.filter(has_text="user mia added")).to_have_count(1)
