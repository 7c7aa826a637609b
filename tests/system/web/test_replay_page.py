"""A replay on the page: a session recorded through the server, replayed from the page's form
with a changed system prompt (a worker runs it), opens side by side with its recording; the
first divergence is named, its diff shown (the old line removed, the new one added) and its
step and recorded event highlighted; the steps are walked with the buttons and the keyboard;
"Fork here" on the replay's side offers the replay's changed prompt to edit, and the fork's
page says it is one (its title, a link to the source's event, the copied events set apart)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from tests.support.browser import open_sign_in_link, screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

NEW_PROMPT = "You are a terse agent.\nWorkspace: {workspace}\n"
FORK_PROMPT = "You are a forked agent.\nWorkspace: {workspace}\n"


def recorded_session(server: ServerProcess, fake_llm: FakeLlmServer, page: Page, token: str) -> str:
    """A two-call session (a command, then finish) run by the server's worker, finished."""
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo recorded-step")]),
        Reply(tool_calls=[tool_call("finish", message="recorded and done")]),
    )
    made = httpx.post(
        f"{server.url}/api/sessions",
        headers={"Authorization": f"Bearer {token}"},
        json={"task": "Echo one line, then finish"},
    )
    assert made.status_code == 201, made.text
    session = str(made.json()["id"])
    page.goto(f"/#/sessions/{session}")
    # (the first step starts the sandbox's shell: tens of seconds on a loaded machine)
    expect(page.locator("#session-state")).to_have_text("finished", timeout=120_000)
    return session


def test_a_replay_with_a_changed_system_prompt_shows_the_divergence(
    server: ServerProcess,
    fake_llm: FakeLlmServer,
    new_page: Callable[..., Page],
    screenshots: Path,
) -> None:
    token = server.token("reviewer", admin=True)
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(token))
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    session = recorded_session(server, fake_llm, page, token)

    page.get_by_role("link", name="Replay…").click()
    expect(page.get_by_role("heading", name="Replay")).to_be_visible()
    # the form holds the recording's system prompt and tools, to edit
    expect(page.get_by_label("System prompt")).to_have_value(
        re.compile(r"^You are Chronicle's coding agent\.")
    )
    expect(page.get_by_label("Tools")).to_have_value(re.compile(r"\bexecute_bash\b.*\bfinish\b"))
    page.get_by_label("System prompt").fill(NEW_PROMPT)
    screenshot_at_both_widths(page, "replay-form", screenshots)
    page.get_by_role("button", name="Run the replay").click()
    page.wait_for_url(re.compile(rf"#/replays/{session}/[0-9a-f-]{{36}}$"))
    replay = page.url.rsplit("/", 1)[-1]
    # a worker runs the replay: the page waits for its result
    expect(page.locator("#replay-verdict")).to_have_text("diverged", timeout=60_000)
    divergence = page.get_by_role("region", name="First divergence")
    expect(divergence).to_contain_text("model call 1: prompt message 0 (system) differs")
    expect(divergence.locator(".d-del").first).to_contain_text("-You are Chronicle's coding agent.")
    expect(divergence.locator(".d-add", has_text="+You are a terse agent.")).to_have_count(1)
    # it opens on the divergence: step 1, both sides marked, the recorded call outlined
    expect(page.locator(".step-label")).to_have_text("Step 1 of 2 · the divergence")
    expect(page.locator(".side.diverged")).to_have_count(2)
    recorded = page.locator(".side.recorded")
    expect(recorded.locator(".event.llm.divergence")).to_have_count(1)
    expect(recorded.locator(".event.run")).to_contain_text("echo recorded-step")
    expect(page.locator(".chip.diverged")).to_have_text("1")
    screenshot_at_both_widths(page, "replay-divergence", screenshots)

    page.get_by_role("button", name="Next step →").click()
    expect(page.locator(".step-label")).to_have_text("Step 2 of 2")
    expect(recorded.locator(".event.finish")).to_contain_text("recorded and done")
    expect(page.locator(".side.replayed")).to_contain_text("The replay has no such step.")
    page.keyboard.press("[")
    page.keyboard.press("[")
    expect(page.locator(".step-label")).to_have_text("Before the first model call (2 steps)")
    expect(page.locator(".side.replayed .event.created")).to_have_count(1)
    page.get_by_role("button", name="Go to the divergence").click()
    expect(page.locator(".step-label")).to_contain_text("the divergence")

    # a positional replay goes on past each difference: every step whose request differed is
    # marked and shows its request's diff (the changed prompt, and the temperature asked for)
    page.goto(f"/#/replays/{session}")
    expect(page.get_by_label("System prompt")).to_have_value(re.compile(r"^You are Chronicle"))
    page.get_by_label("System prompt").fill(NEW_PROMPT)
    page.get_by_label("Mode").select_option("positional")
    page.get_by_label("Temperature").fill("0.5")
    page.get_by_role("button", name="Run the replay").click()
    page.wait_for_url(re.compile(rf"#/replays/{session}/[0-9a-f-]{{36}}$"))
    positional = page.url.rsplit("/", 1)[-1]
    expect(page.locator("#replay-verdict")).to_have_text("requests differed", timeout=60_000)
    expect(page.locator("#differences")).to_contain_text("at model calls 1-2")
    expect(page.locator(".chip.differed")).to_have_text(["1", "2"])
    expect(page.locator(".step-label")).to_have_text("Step 1 of 2 · the request differed")
    difference = page.get_by_role("region", name="This step's request, recorded against replayed")
    expect(difference).to_contain_text("The request differed")
    expect(difference.locator(".d-add", has_text="+You are a terse agent.")).to_have_count(1)
    page.keyboard.press("]")
    expect(page.locator(".step-label")).to_have_text("Step 2 of 2 · the request differed")
    expect(difference).to_be_visible()
    page.keyboard.press("[")
    page.keyboard.press("[")
    expect(difference).to_be_hidden()  # before the first call: nothing was asked
    replayed_params = httpx.get(
        f"{server.url}/api/sessions/{positional}/events",
        headers={"Authorization": f"Bearer {token}"},
    ).json()["events"]
    config = next(e for e in replayed_params if e["kind"] == "session.created")["payload"]
    assert '"temperature": 0.5' in json.dumps(config), config
    page.goto(f"/#/replays/{session}/{replay}")
    expect(page.locator("#replay-verdict")).to_have_text("diverged")

    # the replay's own page links back to this comparison
    page.goto(f"/#/sessions/{replay}")
    page.get_by_role("link", name="compare side by side").click()
    expect(page.locator("#replay-verdict")).to_have_text("diverged")

    # Fork here, on the replay's side after its task: the form holds the replay's changed
    # prompt (not the recording's) and the model, to edit; only what changed is sent
    page.keyboard.press("[")
    replayed = page.locator(".side.replayed")
    task = replayed.locator(".event.message")
    at = task.get_attribute("data-seq")
    task.get_by_role("button", name=re.compile(r"^Fork the replay here")).click()
    page.get_by_text("Model and agent settings").click()
    form = page.get_by_role("form", name="Fork")
    expect(form.get_by_label("System prompt")).to_have_value(NEW_PROMPT)
    expect(form.get_by_label("Model")).to_have_value("openai/fake-model")
    form.get_by_label("System prompt").fill(FORK_PROMPT)
    form.get_by_label("Temperature").fill("0.4")
    form.get_by_label("Message for the forked agent").fill("finish from here")
    screenshot_at_both_widths(page, "fork-form", screenshots)
    asked = len(fake_llm.requests)
    fake_llm.script(Reply(tool_calls=[tool_call("finish", message="forked and done")]))
    form.get_by_role("button", name="Start the fork").click()
    page.wait_for_url(re.compile(r"#/sessions/[0-9a-f-]{36}$"))
    fork = page.url.rsplit("/", 1)[-1]
    assert fork not in (session, replay)
    expect(page.locator(".event.finish").last).to_contain_text("forked and done", timeout=120_000)
    sent = fake_llm.requests[asked]
    assert sent["messages"][0]["content"].startswith("You are a forked agent.")
    assert sent["temperature"] == 0.4 and sent["model"] == "fake-model"
    # the fork says it is one: its title, a link to the source's event, the copied events
    # greyed and set apart from its own by a divider
    expect(page.locator("#session-title")).to_have_text(
        f"Fork of «replay of Echo one line, then finish» at #{at}"
    )
    expect(page.locator(".facts-line .fork-of a")).to_have_attribute(
        "href", f"#/sessions/{replay}/events/{at}"
    )
    divider = page.locator(".timeline > .fork-divider")
    expect(divider).to_have_text(
        f"Copied from {replay[:8]} up to #{at}; the fork's own events follow"
    )
    expect(page.locator(".timeline > .event.copied")).to_have_count(int(at))
    expect(page.locator(".fork-divider + .event.own.message")).to_contain_text("finish from here")
    expect(page.locator(".facts-line")).to_contain_text("1 model call ")  # the summary caught up
    screenshot_at_both_widths(page, "fork", screenshots)
