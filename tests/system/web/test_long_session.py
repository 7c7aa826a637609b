"""A 10,000-event session opens on its first page (200 events, fetched as one page of the
API), says how many events it has, and shows the rest a page at a time (a button, j on the
last event, "Show all"); a command's output on a later page still lands inside its command,
and once everything is shown new events are drawn live.

Before paging, the page drew every event the stream sent (no first-screen mark, no "more"
bar): these assertions fail against that version."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from app.events import Event, LlmCall, Message, Run, RunOutput, SessionCreated, Think
from tests.support.browser import open_sign_in_link, screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess
from tests.support.long_sessions import append, run_async

EVENTS = 10_000


def long_session() -> list[Event]:
    """The task, then steps of four events (model call, command, its output, a thought):
    seq 3 + 4k is a model call, 4 + 4k its command, 5 + 4k the command's output."""
    events: list[Event] = [SessionCreated(config={}), Message(content="a very long task")]
    step = 0
    while len(events) < EVENTS:
        first = len(events) + 1
        events += [
            LlmCall(model="m", fingerprint="f"),
            Run(command=f"echo step-{step}", cause=first),
            RunOutput(output=f"step-{step}\n", exit_code=0, cause=first + 1),
            Think(thought=f"thinking about step {step}"),
        ]
        step += 1
    return events[:EVENTS]


def test_a_long_session_opens_on_its_first_page_and_pages_on(
    server: ServerProcess, new_page: Callable[..., Page], screenshots: Path
) -> None:
    session = uuid.uuid4()
    database = server.env["CHRONICLE_DATABASE_URL"]
    run_async(append(database, session, long_session(), 0))
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(server.token("auditor", admin=True)))
    page.goto(f"/#/sessions/{session}")

    more = page.locator(".timeline-more")
    expect(more).to_contain_text("Showing 200 of 10,000 events.")
    first_screen = page.evaluate(
        "() => performance.getEntriesByName('chronicle:timeline-first-screen').length"
    )
    assert first_screen == 1
    # 200 events, each command's output drawn inside the command: 151 items
    expect(page.locator(".timeline > li")).to_have_count(151)
    # seq 200 is a command whose output (seq 201) is on the next page: still running here
    command = page.locator('.event[data-seq="200"]')
    expect(command).to_contain_text("echo step-49")
    expect(command.locator(".running")).to_be_visible()
    expect(page.locator('.event[data-seq="202"]')).to_have_count(0)
    screenshot_at_both_widths(page, "long-session", screenshots)

    page.get_by_role("button", name="Show the next 500").click()
    expect(more).to_contain_text("Showing 700 of 10,000 events.")
    expect(command.locator("pre.stdout")).to_have_text("step-49")
    expect(command.locator(".exit")).to_have_text("exit 0")

    # j on the last event shown goes on into the next page
    last = page.locator(".timeline > li").last
    expect(last).to_have_attribute("data-seq", "700")  # a command; its output (701) waits
    last.focus()
    page.keyboard.press("j")
    expect(more).to_contain_text("Showing 1,200 of 10,000 events.")
    # the next item is the thought at 702 (the output went inside its command)
    expect(page.locator(".timeline > li:focus")).to_have_attribute("data-seq", "702")

    page.get_by_role("button", name="Show all").click()
    # the stream may still be bringing the last events in (9,800 of them on a loaded machine):
    # what is shown is all that has arrived, and the rest is drawn as it comes
    expect(more).to_be_hidden(timeout=120_000)
    expect(page.locator('.event[data-seq="10000"]')).to_contain_text("echo step-2499")

    # everything is shown: a new event is drawn as it is recorded
    run_async(append(database, session, [Message(content="one more thing")], EVENTS))
    live = page.locator('.event[data-seq="10001"]')
    # waited for as a count first: Playwright (1.65) answers each miss of a single-element
    # expectation with an ARIA snapshot of the whole page, minutes for these 275,000 nodes
    expect(live).to_have_count(1)
    expect(live).to_contain_text("one more thing")
    expect(more).to_be_hidden()
