"""Finding things in a 10,000-event session: a link to one event (by the 8 characters of the
session's id the page shows) opens the timeline at it, outlined, a model call opened; the
search counts, lists and steps through matches of the whole session, drawing the list up to
each; every #seq is a link; an unknown session is a not-found page and nothing else."""

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
#: Every FAILING-th step's command fails (exit 2, a traceback): steps 0, 500, ... 2000.
FAILING = 500


def session_with_failures() -> list[Event]:
    """Steps of four events as in test_long_session (seq 3 + 4k a model call, 4 + 4k its
    command, 5 + 4k the output), five of whose commands fail."""
    events: list[Event] = [SessionCreated(config={}), Message(content="find the bug")]
    step = 0
    while len(events) < EVENTS:
        first = len(events) + 1
        failed = step % FAILING == 0
        events += [
            LlmCall(model="m", fingerprint="f"),
            Run(command=f"python step_{step}.py", cause=first),
            RunOutput(
                output="Traceback (most recent call last):\nKeyError: 'quux'\n"
                if failed
                else f"step {step} ok\n",
                exit_code=2 if failed else 0,
                cause=first + 1,
            ),
            Think(thought=f"thinking about step {step}"),
        ]
        step += 1
    return events[:EVENTS]


def test_links_and_search_reach_any_event_of_a_long_session(
    server: ServerProcess, new_page: Callable[..., Page], screenshots: Path
) -> None:
    session = uuid.uuid4()
    run_async(append(server.env["CHRONICLE_DATABASE_URL"], session, session_with_failures(), 0))
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(server.token("auditor", admin=True)))

    # the short id the page shows names the session; the link opens a window at #9003
    page.goto(f"/#/sessions/{str(session)[:8]}/events/9003")
    expect(page).to_have_url(f"{server.url}/#/sessions/{session}/events/9003")
    call = page.locator('.event[data-seq="9003"]')
    expect(call).to_have_class("event llm target")
    expect(call.locator("details.model-call")).to_have_attribute("open", "")
    expect(call.locator("summary a.seq")).to_have_text("#9003")
    expect(call.locator("summary time.when")).to_have_count(1)
    expect(page.locator(".timeline-before")).to_contain_text("Events #1 to #8982 are not shown.")
    assert page.locator('.event[data-seq="100"]').count() == 0
    expect(page.locator(".timeline-more")).to_contain_text("events from #8983")

    # errors only: five failed commands in the whole session, stepped through
    page.locator("#find-kind").select_option("errors")
    expect(page.locator("#find-count")).to_have_text("5 matches")
    page.get_by_role("button", name="Next ↓").click()
    expect(page.locator("#find-count")).to_have_text("1 of 5 matches")
    # step 0's output (seq 5) is before the window: the list is opened from the start again
    expect(page).to_have_url(f"{server.url}/#/sessions/{session}/events/5")
    first_error = page.locator('.output[data-seq="5"]')
    expect(first_error).to_have_class("output bad match target")
    expect(first_error).to_contain_text("KeyError: 'quux'")
    expect(page.locator(".timeline-before")).to_be_hidden()
    page.keyboard.press("n")  # the next, 2,000 events on: the list is drawn up to it
    expect(page.locator("#find-count")).to_have_text("2 of 5 matches")
    expect(page.locator('.output[data-seq="2005"]')).to_have_class("output bad match target")
    expect(page.locator(".timeline-before")).to_be_hidden()
    page.keyboard.press("N")
    expect(page.locator("#find-count")).to_have_text("1 of 5 matches")

    # words, with a kind: found in outputs drawn or not, listed with their text
    page.locator("#find-kind").select_option("")
    page.locator("#find-text").fill("thinking about step 2498")
    # a text search reads all 10,000 events whole: on a loaded machine it took over 30 s once
    expect(page.locator("#find-count")).to_have_text("1 match", timeout=90_000)
    page.get_by_text("List the matches").click()
    listed = page.locator(".find-results li")
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text("#9998")
    expect(listed).to_contain_text("thinking about step 2498")
    page.locator("#find-text").fill("KeyError")
    page.locator("#find-kind").select_option("commands")
    expect(page.locator("#find-count")).to_have_text("5 matches")
    page.evaluate("window.scrollTo(0, 0)")
    screenshot_at_both_widths(page, "session-find", screenshots, full_page=False)
    page.locator("#find-text").fill("no such words anywhere")
    expect(page.locator("#find-count")).to_have_text("no match")

    # a #seq is a link: it opens its event in place, the page kept
    page.locator('.event[data-seq="2004"] > .meta a.seq').click()
    expect(page).to_have_url(f"{server.url}/#/sessions/{session}/events/2004")
    expect(page.locator('.event[data-seq="2004"]')).to_have_class("event run target")
    expect(page.locator("#find-text")).to_have_value("no such words anywhere")  # same page

    # an unknown session, or a prefix of none: a not-found page, no timeline, no stream
    page.goto(f"/#/sessions/{uuid.uuid4()}")
    expect(page.get_by_role("heading", name="No such session")).to_be_visible()
    expect(page.locator(".timeline, .connection")).to_have_count(0)
    page.goto("/#/sessions/0000ffff")
    expect(page.get_by_text("No session of yours has an id beginning with 0000ffff")).to_have_count(
        1
    )
