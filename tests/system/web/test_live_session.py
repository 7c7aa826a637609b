"""A session started from the web page and watched live: its events arrive over the stream
while the agent works (a command's output with its exit code), pause and resume steer it
(each button enabled only where it applies),
a model call opens to what was asked and answered, a message reaches the log, verify checks
the chain, times show in the viewer's own time zone, and a second user sees none of it."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
from playwright.sync_api import Page, expect

from tests.support.browser import screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

#: Long enough for the test to press Pause while the agent's second command runs (the pause
#: interrupts it; the agent hears so when it resumes).
SECOND_COMMAND = "sleep 4 && echo second-step-done"


def sign_in(page: Page, token: str) -> None:
    """Sign in as a person does: the token pasted into the page's form."""
    page.goto("/")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def start_session(page: Page, task: str, screenshots: Path | None = None) -> str:
    page.get_by_role("link", name="New session").first.click()
    expect(page.get_by_role("heading", name="New session")).to_be_visible()
    if screenshots is not None:
        screenshot_at_both_widths(page, "new-session", screenshots)
    page.get_by_label("Task").fill(task)
    page.get_by_label("Most steps").fill("10")
    page.get_by_role("button", name="Start session").click()
    page.wait_for_url(re.compile(r"#/sessions/[0-9a-f-]{36}$"))
    return page.url.rsplit("/", 1)[-1]


def lay_out_every_event(page: Page) -> None:
    """For a whole-page screenshot: the timeline skips laying out events off screen
    (content-visibility), which a full-page photo would show as empty boxes."""
    page.evaluate(
        "() => document.querySelectorAll('.timeline > .event')"
        ".forEach((node) => { node.style.contentVisibility = 'visible'; })"
    )


def timeline_states(page: Page) -> list[str]:
    return page.locator(".timeline .event.state .state").all_inner_texts()


def test_a_session_runs_live_pauses_resumes_and_opens_its_model_calls(
    server: ServerProcess,
    fake_llm: FakeLlmServer,
    new_page: Callable[..., Page],
    screenshots: Path,
) -> None:
    fake_llm.script(
        Reply(
            content="I will look first.",
            tool_calls=[tool_call("execute_bash", command="echo first-step-done")],
            prompt_tokens=321,
            completion_tokens=45,
        ),
        Reply(tool_calls=[tool_call("execute_bash", command=SECOND_COMMAND)]),
        Reply(tool_calls=[tool_call("finish", message="All done from the web.")]),
        Reply(tool_calls=[tool_call("finish", message="You are welcome.")]),
    )
    token = server.token("alice")
    page = new_page(timezone_id="Asia/Kolkata")
    sign_in(page, token)
    session = start_session(page, "Print two lines\nthen finish", screenshots)

    # Live: the first command's output arrives while the session is still running.
    first = page.locator(".event.run", has_text="echo first-step-done")
    # (the first step starts the sandbox's shell: tens of seconds on a loaded machine)
    expect(first.locator(".exit")).to_have_text("exit 0", timeout=120_000)
    expect(first.locator("pre.stdout")).to_have_text("first-step-done")
    expect(page.locator(".connection")).to_have_text("live")
    second = page.locator(".event.run", has_text=SECOND_COMMAND)
    expect(second).to_be_visible()
    assert second.locator(".exit").count() == 0, "the second command ended before the pause"
    # only the steering that applies to the state is enabled (issue 23, item 3)
    pause, resume, stop = (page.get_by_role("button", name=n) for n in ("Pause", "Resume", "Stop"))
    expect(pause).to_be_enabled()
    expect(stop).to_be_enabled()
    expect(resume).to_be_disabled()
    pause.click()
    expect(page.locator("#session-state")).to_have_text("paused")
    assert "paused" in timeline_states(page)
    assert len(fake_llm.requests) == 2, "a paused session asked the model again"
    expect(page.locator(".event.state", has_text="paused by alice")).to_have_count(1)
    expect(resume).to_be_enabled()
    expect(pause).to_be_disabled()

    resume.click()
    expect(page.locator("#session-state")).to_have_text("finished", timeout=30_000)
    for control in (pause, resume, stop):  # a finished session is continued by a message
        expect(control).to_be_disabled()
    expect(page.locator(".event.finish")).to_contain_text("All done from the web.")
    assert len(fake_llm.requests) == 3

    # A model call opens to its prompt, tools, response, tokens, cost and latency.
    call = page.locator(".event.llm").first
    line = call.locator("summary").first
    expect(line).to_contain_text("321 in / 45 out")
    # its number (a link to it) and time, like every other event's; its latency
    expect(line.locator("a.seq")).to_have_text(re.compile(r"^#\d+$"))
    expect(line.locator("time.when")).to_have_count(1)
    expect(line).to_contain_text(re.compile(r"\d ms|\d s"))
    line.click()
    details = call.locator(".details")
    expect(details).to_be_visible()
    expect(details).to_contain_text("I will look first.")
    expect(details.locator(".tool-calls")).to_contain_text("echo first-step-done")
    expect(details).to_contain_text("321 prompt")
    # tokens, cost, latency and attempts are said once: in the row and the call's facts
    assert details.inner_text().count("321 prompt") == 1
    expect(details).not_to_contain_text("Latency")
    expect(details).to_contain_text("Tools offered")
    assert re.search(r"\d+ messages?", details.inner_text())
    # ... and to the exact request, from the model-calls route: every prompt message with its
    # role and text, the tools offered with their schemas, the response as recorded, retries
    exact = details.locator(".exact")
    expect(exact.get_by_role("heading", name="Prompt (2 messages)")).to_be_visible()
    messages = exact.locator(".prompt-message")
    expect(messages.nth(0)).to_contain_text("system")
    expect(messages.nth(0)).to_contain_text("You are Chronicle's coding agent.")
    expect(messages.nth(1)).to_contain_text("Print two lines\nthen finish")
    expect(exact.locator(".tools-offered")).to_contain_text("execute_bash")
    expect(exact.locator(".tools-offered")).to_contain_text("finish")
    expect(exact).to_contain_text('"I will look first."')

    # Times are the viewer's: the session.created stamp in Asia/Kolkata (UTC+05:30).
    events = httpx.get(
        f"{server.url}/api/sessions/{session}/events",
        headers={"Authorization": f"Bearer {token}"},
    ).json()["events"]
    created = datetime.fromisoformat(events[0]["created_at"]).astimezone(ZoneInfo("Asia/Kolkata"))
    stamp = page.locator(f'.event[data-seq="{events[0]["seq"]}"] time.when').inner_text()
    assert created.strftime("%I:%M:%S %p") == stamp.replace("\u202f", " "), stamp

    # Verify checks the hash chain on demand (here, of the ended session: a verify of a session
    # while events are being appended can find its head ahead of the log it read).
    page.get_by_role("button", name="Verify").click()
    expect(page.locator(".verify")).to_contain_text("intact")

    # A message goes into the log and wakes the agent, which answers.
    page.get_by_label("Message to the agent").fill("thanks, that is all")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".event.message.from-user", has_text="thanks, that is all")).to_be_visible()
    expect(page.locator(".event.finish").last).to_contain_text("You are welcome.", timeout=60_000)

    lay_out_every_event(page)
    screenshot_at_both_widths(page, "session-timeline", screenshots)
    call.locator("summary").first.scroll_into_view_if_needed()
    screenshot_at_both_widths(page, "session-model-call", screenshots)

    # The list shows it with its state, model and steps, and filters by state and text.
    page.get_by_role("link", name="Sessions").first.click()
    row = page.locator("tr", has_text="Print two lines")
    expect(row).to_contain_text("openai/fake-model")
    page.get_by_label("Text").fill("no such words")
    expect(page.get_by_text("No session matches these filters.")).to_be_visible()
    # the API filters (q=): each word must begin a word of the title, so "wo" (inside "two")
    # finds nothing, where a substring filter of the page would have kept the row
    page.get_by_label("Text").fill("wo lines")
    expect(page.get_by_text("No session matches these filters.")).to_be_visible()
    with page.expect_request(lambda request: "q=two+lin" in request.url):
        page.get_by_label("Text").fill("two lin")
    expect(row).to_be_visible()
    screenshot_at_both_widths(page, "sessions", screenshots)


def test_a_second_user_sees_nothing_of_the_first_users_sessions(
    server: ServerProcess, fake_llm: FakeLlmServer, new_page: Callable[..., Page]
) -> None:
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="done")]))
    alice = new_page()
    alice_token = server.token("alice")
    sign_in(alice, alice_token)
    session = start_session(alice, "Alice's secret task")
    expect(alice.locator("#session-state")).to_have_text("finished", timeout=30_000)

    mallory = new_page()
    mallory_token = server.token("mallory")
    sign_in(mallory, mallory_token)
    expect(mallory.get_by_text("No sessions yet")).to_be_visible()
    expect(mallory.get_by_text("Alice's secret task")).to_have_count(0)
    mallory.goto(f"/#/sessions/{session}")
    expect(mallory.get_by_role("heading", name="No such session")).to_be_visible()
    expect(mallory.get_by_text("it is not yours")).to_be_visible()
    expect(mallory.locator(".timeline, .connection")).to_have_count(0)
    expect(mallory.get_by_text("Alice's secret task")).to_have_count(0)
    # nothing to steer where nothing is shown; the API says so too
    expect(mallory.get_by_role("button", name="Pause")).to_have_count(0)
    refused = httpx.post(
        f"{server.url}/api/sessions/{session}/pause",
        headers={"Authorization": f"Bearer {mallory_token}"},
    )
    assert refused.status_code == 404 and f"no session {session}" in refused.json()["detail"]
    events = httpx.get(
        f"{server.url}/api/sessions/{session}/events",
        headers={"Authorization": f"Bearer {alice_token}"},
    ).json()["events"]
    assert [e for e in events if e["source"] == "user" and e["kind"] == "agent.state"] == []
