"""Annotations and the review queue in a real browser, at 1280 and 390 px: a member labels a
command and the whole session, sees the chips (the comment when opened) and the annotation's
own entry in the timeline, filters the sessions list by label and by tag, and walks the review
queue to its end ("Reviewed, next" records a `reviewed` annotation and opens the next)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess, wait_until_run_ended
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

COMMAND = "echo cleaning && rm -rf build"


def sign_in(page: Page, token: str) -> None:
    page.goto("/")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def lay_out_every_event(page: Page) -> None:
    """For a whole-page screenshot (the timeline skips laying out events off screen)."""
    page.evaluate(
        "() => document.querySelectorAll('.timeline > .event')"
        ".forEach((node) => { node.style.contentVisibility = 'visible'; })"
    )


def ended_session(server: ServerProcess, token: str, task: str) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    created = httpx.post(f"{server.url}/api/sessions", headers=headers, json={"task": task})
    assert created.status_code == 201, created.text
    session: str = created.json()["id"]
    wait_until_run_ended(server.url, headers, session)
    return session


def annotations_of(server: ServerProcess, token: str, session: str) -> list[dict]:
    answer = httpx.get(
        f"{server.url}/api/sessions/{session}/annotations",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 200, answer.text
    found: list[dict] = answer.json()["annotations"]
    return found


def listed_titles(page: Page) -> list[str]:
    return page.locator("table.sessions tbody tr td:first-child a").all_inner_texts()


@pytest.mark.parametrize("width", [1280, 390])
def test_annotate_see_the_chips_filter_the_list_and_walk_the_review_queue(
    server: ServerProcess,
    new_page: Callable[..., Page],
    fake_llm: FakeLlmServer,
    screenshots: Path,
    width: int,
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command=COMMAND)]),
        Reply(tool_calls=[tool_call("finish", message="cleaned")]),
        Reply(tool_calls=[tool_call("finish", message="nothing to do")]),
    )
    ada = server.token("ada")
    cleanup = ended_session(server, ada, "clean the build directory")
    other = ended_session(server, ada, "say hello")

    page = new_page()
    page.set_viewport_size({"width": width, "height": 800})
    sign_in(page, ada)
    page.goto(f"/#/sessions/{cleanup}")
    command = page.locator(".timeline > li.event.run").filter(has_text=COMMAND)
    expect(command.locator(".stdout")).to_contain_text("cleaning")  # its output is in

    # an event: the command
    command.get_by_role("button", name="Annotate").click()
    form = page.get_by_role("form", name="Annotate event")
    form.get_by_label("Label").fill("unsafe command")
    form.get_by_label("Tags").fill("shell, prod")
    form.get_by_label("Comment (optional)").fill("deletes without asking")
    form.get_by_role("button", name="Save annotation").click()
    expect(form).to_have_count(0)
    chip = command.locator(".annotation-chip")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text("unsafe command · ada")
    expect(chip).to_have_attribute("title", "deletes without asking\ntags: shell, prod")
    expect(chip.get_by_text("deletes without asking")).to_be_hidden()
    chip.locator("summary").click()
    expect(chip.get_by_text("deletes without asking")).to_be_visible()
    # the annotation's own entry, from the live stream, names the event it is about
    entry = page.locator(".timeline > li.event.annotation")
    expect(entry).to_have_count(1)
    expect(
        entry.get_by_role("button", name=f"Go to event #{command.get_attribute('data-seq')}")
    ).to_be_visible()

    # the whole session
    page.get_by_role("button", name="Annotate…").click()
    form = page.get_by_role("form", name="Annotate the session")
    form.get_by_label("Label").fill("wrong answer")
    form.get_by_role("button", name="Save annotation").click()
    session_chip = page.locator(".session-annotations .annotation-chip")
    expect(session_chip).to_contain_text("wrong answer · ada")
    expect(page.locator(".timeline > li.event.annotation")).to_have_count(2)
    recorded = annotations_of(server, ada, cleanup)
    assert [(a["label"], a["user"], a["tags"]) for a in recorded] == [
        ("unsafe command", "ada", ["shell", "prod"]),
        ("wrong answer", "ada", []),
    ]
    assert recorded[0]["target_seq"] == int(command.get_attribute("data-seq") or 0)
    # opened afresh, the chips come from the session's annotations, on what they are about
    page.reload()
    expect(command.locator(".annotation-chip")).to_contain_text("unsafe command · ada")
    expect(page.locator(".session-annotations .annotation-chip")).to_contain_text("wrong answer")
    expect(page.locator(".annotation-chip")).to_have_count(4)  # and in the two entries
    command.locator(".annotation-chip summary").click()
    expect(command.get_by_text("deletes without asking")).to_be_visible()
    if width == 1280:
        lay_out_every_event(page)
        screenshot_at_both_widths(page, "annotated-timeline", screenshots)

    # the list, by label, then by tag (the API filters: both sessions are listed before)
    page.get_by_role("link", name="Sessions").first.click()
    expect(page.locator("table.sessions tbody tr")).to_have_count(2)
    folded = page.locator("details.filters-fold")  # folded on a phone: open it
    if folded.get_attribute("open") is None:
        folded.locator("summary").click()
    page.get_by_label("Annotation label").fill("Unsafe Command")
    page.get_by_label("Annotation label").press("Enter")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)
    assert listed_titles(page) == ["clean the build directory"]
    page.get_by_label("Annotation label").fill("")
    page.get_by_label("Annotation tag").fill("nope")
    page.get_by_label("Annotation tag").press("Enter")
    expect(page.get_by_text("No session matches these filters.")).to_be_visible()
    page.get_by_label("Annotation tag").fill("prod")
    page.get_by_label("Annotation tag").press("Enter")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)

    # the review queue: both, newest first; each reviewed in turn
    page.get_by_role("link", name="Review").click()
    expect(page.get_by_role("heading", name="Review queue")).to_be_visible()
    expect(page.locator(".review-left")).to_have_text("2 left to review")
    expect(page.locator("#session-title")).to_have_text("say hello")
    page.get_by_label("Review comment").fill("looks right")
    if width == 1280:
        lay_out_every_event(page)
        screenshot_at_both_widths(page, "review-queue", screenshots)
    page.get_by_role("button", name="Reviewed, next").click()
    expect(page.locator(".review-left")).to_have_text("1 left to review")
    expect(page.locator("#session-title")).to_have_text("clean the build directory")
    expect(page.locator(".session-annotations .annotation-chip")).to_contain_text("wrong answer")
    page.get_by_role("button", name="Reviewed, next").click()
    expect(page.locator(".review-left")).to_have_text("0 left to review")
    expect(page.get_by_text("Nothing left to review with these filters.")).to_be_visible()
    reviewed = [a for a in annotations_of(server, ada, other) if a["label"] == "reviewed"]
    assert [(a["comment"], a["target_seq"], a["user"]) for a in reviewed] == [
        ("looks right", None, "ada")
    ]
    assert [a["label"] for a in annotations_of(server, ada, cleanup)][-1] == "reviewed"

    # a filtered queue that the label reaches: reviewed sessions are not in it any more
    page.goto("/#/review?label=unsafe%20command")
    page.get_by_text("Filters: label unsafe command").click()
    expect(page.get_by_label("Annotation label")).to_have_value("unsafe command")
    expect(page.locator(".review-left")).to_have_text("0 left to review")
