"""Redacting from the session's page in a real browser: an admin picks a field of a member's
message in the Redact dialog, says why, and the page draws the message again with the field
as its placeholder, a "redacted" badge and the record's own entry; a refusal (the field is
already redacted) is said in the dialog; the API reads the placeholder; the member, the
session's owner, has no Redact control and sees what was removed, by whom and why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from tests.support.browser import open_sign_in_link, screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess, wait_until_run_ended
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

TASK = "open the shed, the door code is 4471 blue heron"
REASON = "a door code in the task"


def test_an_admin_redacts_a_field_of_a_message_and_a_member_cannot(
    server: ServerProcess,
    new_page: Callable[..., Page],
    fake_llm: FakeLlmServer,
    screenshots: Path,
) -> None:
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="opened")]))
    member = server.token("mia")
    admin = server.token("root", admin=True)
    as_member = {"Authorization": f"Bearer {member}"}
    created = httpx.post(f"{server.url}/api/sessions", headers=as_member, json={"task": TASK})
    assert created.status_code == 201, created.text
    session = created.json()["id"]
    wait_until_run_ended(server.url, as_member, session)

    page = new_page()
    open_sign_in_link(page, server.sign_in_path(admin))
    page.goto(f"/#/sessions/{session}")
    message = page.locator('.timeline > li.event[data-kind="message"]').filter(has_text=TASK)
    expect(message).to_have_count(1)
    seq = int(message.get_attribute("data-seq") or 0)
    message = page.locator(f'.timeline > li.event[data-seq="{seq}"]')  # its text is to go

    message.get_by_role("button", name=f"Redact event #{seq}").click()
    dialog = page.get_by_role("dialog", name=f"Redact event #{seq} (message)")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("note")).to_contain_text("This cannot be undone.")
    field = dialog.get_by_label("Pick a field")
    # each field with a preview of what it holds (a long text's first 40 characters)
    expect(field.locator("option")).to_have_text(
        ["Choose a field…", '/user — "mia"', f'/content — "{TASK[:40]}…"']
    )
    # a pointer with no reason is not sent (the reason is required); then the field picked
    dialog.get_by_label("Reason").fill("   ")
    dialog.get_by_role("button", name="Redact").click()
    expect(dialog.get_by_role("alert")).to_have_text(
        "Choose a field, or type a JSON Pointer beginning with / (or choose the whole payload)."
    )
    field.select_option("/content")
    expect(dialog.get_by_label("JSON Pointer")).to_have_value("/content")
    dialog.get_by_role("button", name="Redact").click()
    expect(dialog.get_by_role("alert")).to_have_text(
        "Say why: the reason is recorded with the redaction."
    )
    dialog.get_by_label("Reason").fill(REASON)
    screenshot_at_both_widths(page, "redact-dialog", screenshots)
    dialog.get_by_role("button", name="Redact").click()
    expect(dialog).to_be_hidden()

    # drawn again: the placeholder, the badge, what was removed; the record's own entry
    expect(message.locator(".bubble")).to_have_text("[redacted]")
    expect(message.locator(".redacted-badge")).to_have_text("redacted")
    expect(message.locator(".redactions-of")).to_contain_text("/content redacted by root at")
    expect(message.locator(".redactions-of")).to_contain_text(REASON)
    expect(message).not_to_contain_text(TASK)  # (other copies, the title's, stay: one field went)
    record = page.locator('.timeline > li.event[data-kind="redaction"]')
    expect(record).to_have_count(1)
    expect(record.locator(".redaction-line")).to_have_text(
        f"Event #{seq} /content (string) redacted by root: {REASON}"
    )
    expect(record.get_by_role("link", name=f"#{seq}")).to_have_attribute(
        "href", f"#/sessions/{session}/events/{seq}"
    )
    screenshot_at_both_widths(page, "redacted-message", screenshots)
    # the kind filter finds it
    page.get_by_label("Kind of event").select_option("redactions")
    expect(page.locator("#find-count")).to_have_text("1 match")
    expect(page.locator(".find-results")).to_contain_text(
        f"#{seq} /content redacted by root: {REASON}"
    )

    # a refusal is said in the dialog, which stays open; the field is no longer offered
    message.get_by_role("button", name=f"Redact event #{seq}").click()
    expect(dialog).to_be_visible()
    expect(field.locator("option")).to_have_text(["Choose a field…", '/user — "mia"'])
    dialog.get_by_label("JSON Pointer").fill("/content")
    dialog.get_by_label("Reason").fill("again")
    dialog.get_by_role("button", name="Redact").click()
    expect(dialog.get_by_role("alert")).to_have_text(
        "Not redacted (422): /content is already redacted"
    )
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()

    # the API reads the placeholder, and the record says who and why
    events = httpx.get(f"{server.url}/api/sessions/{session}/events", headers=as_member)
    assert events.status_code == 200, events.text
    by_seq = {e["seq"]: e for e in events.json()["events"]}
    assert by_seq[seq]["payload"]["content"] == "[redacted]"
    assert by_seq[seq]["payload"]["user"] == "mia"
    [made] = [e for e in by_seq.values() if e["kind"] == "redaction"]
    assert made["payload"]["target_seq"] == seq
    assert (made["payload"]["path"], made["payload"]["reason"]) == ("/content", REASON)

    # the owner, a member: no Redact control, and the redaction shown as the admin left it
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(member))
    page.goto(f"/#/sessions/{session}")
    message = page.locator(f'.timeline > li.event[data-seq="{seq}"]')
    expect(message.locator(".bubble")).to_have_text("[redacted]")
    expect(message.locator(".redacted-badge")).to_be_visible()
    expect(page.locator('.timeline > li.event[data-kind="redaction"]')).to_have_count(1)
    expect(page.locator(".timeline .annotate-here").first).to_be_visible()  # drawn whole
    expect(page.locator(".redact-here")).to_have_count(0)
    expect(page.get_by_role("dialog")).to_have_count(0)
