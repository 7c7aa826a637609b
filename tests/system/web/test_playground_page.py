"""The playground on the page: a model call (recorded through the model gateway) opened in the
timeline, "Try in playground", a tools field that is not JSON said at the field, the system
prompt edited and sent; the original and new responses side by side (text, tool calls,
tokens, cost, latency); the link to the new session, which names the call it came from; the
original session lists the run."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from tests.support.browser import open_sign_in_link, screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

SYSTEM = "Answer in one word."
NEW_SYSTEM = "Answer with a city and look up its weather."
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "the weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def gateway_call(server: ServerProcess, fake_llm: FakeLlmServer, token: str) -> str:
    """One call through the model gateway: a session of its own with one llm.call."""
    fake_llm.script(Reply(content="Paris.", prompt_tokens=12, completion_tokens=3))
    made = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {token}", "X-Chronicle-Session": "capitals"},
        json={
            "model": "fake-model",
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "Capital of France?"},
            ],
            "tools": [WEATHER],
            "temperature": 0,
        },
        timeout=60,
    )
    assert made.status_code == 200, made.text
    return made.headers["x-chronicle-session"]


def test_a_call_edited_in_the_playground_is_answered_beside_the_original(
    server: ServerProcess,
    fake_llm: FakeLlmServer,
    new_page: Callable[..., Page],
    screenshots: Path,
) -> None:
    token = server.token("alice")
    session = gateway_call(server, fake_llm, token)
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(token))
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    page.goto(f"/#/sessions/{session}")

    # the call, opened, offers the playground
    call = page.locator(".event.llm").first
    call.locator("summary").first.click()
    call.get_by_role("link", name="Try in playground").click()
    page.wait_for_url(re.compile(rf"#/sessions/{session}/calls/2/playground$"))
    expect(page.get_by_role("heading", name="Playground: model call #2")).to_be_visible()
    expect(page.get_by_label("Model", exact=True)).to_have_value("openai/fake-model")
    expect(page.get_by_label("Text of message 0")).to_have_value(SYSTEM)
    expect(page.get_by_label("Role of message 1")).to_have_value("user")
    expect(page.get_by_label("Tools offered (JSON)")).to_have_value(re.compile('"weather"'))
    expect(page.get_by_label("Temperature")).to_have_value("0")

    # tools that are not JSON are said at the field, and nothing is sent
    tools = page.get_by_label("Tools offered (JSON)")
    recorded_tools = tools.input_value()
    tools.fill('[{"type": "function"')
    expect(page.locator("#pg-tools-error")).to_contain_text("Not JSON")
    expect(tools).to_have_attribute("aria-invalid", "true")
    asked = len(fake_llm.requests)
    page.get_by_role("button", name="Send").click()
    expect(tools).to_be_focused()
    assert len(fake_llm.requests) == asked
    tools.fill(recorded_tools)
    expect(page.locator("#pg-tools-error")).to_be_hidden()

    # a message added, then removed again; the system prompt edited; sent
    page.get_by_role("button", name="Add a message").click()
    expect(page.get_by_label("Text of message 2")).to_be_focused()
    page.get_by_role("button", name="Remove message 2").click()
    expect(page.get_by_label("Text of message 2")).to_have_count(0)
    page.get_by_label("Text of message 0").fill(NEW_SYSTEM)
    fake_llm.script(
        Reply(
            content="Paris; checking the weather.",
            tool_calls=[tool_call("weather", city="Paris")],
            prompt_tokens=40,
            completion_tokens=9,
        )
    )
    page.get_by_role("button", name="Send").click()

    results = page.get_by_role("region", name="The original response and the new one")
    expect(results).to_contain_text("Changed: message 0 (system) edited")
    original = results.get_by_role("region", name="Original · call #2")
    new = results.get_by_role("region", name="Playground")
    expect(original).to_contain_text("Paris.")
    expect(original).to_contain_text("12 prompt")
    expect(new).to_contain_text("Paris; checking the weather.")
    expect(new.locator(".tool-calls")).to_contain_text("weather")
    expect(new.locator(".tool-calls")).to_contain_text('"city": "Paris"')
    expect(new).to_contain_text("40 prompt (0 cached), 9 completion")
    expect(new).to_contain_text("Latency")
    expect(new).to_contain_text("Cost")
    assert fake_llm.requests[-1]["messages"][0]["content"] == NEW_SYSTEM
    # the two responses side by side at 1280 px (one above the other on a phone)
    left, right = original.bounding_box(), new.bounding_box()
    assert left is not None and right is not None
    assert right["x"] > left["x"] + left["width"] - 1 and abs(right["y"] - left["y"]) < 2
    expect(page.get_by_role("region", name=re.compile(r"^Runs of this call"))).to_contain_text(
        "message 0 (system) edited"
    )
    screenshot_at_both_widths(page, "playground", screenshots)
    page.set_viewport_size({"width": 390, "height": 844})  # on a phone: one above the other
    left, right = original.bounding_box(), new.bounding_box()
    assert left is not None and right is not None
    assert right["y"] >= left["y"] + left["height"] - 1
    page.set_viewport_size({"width": 1280, "height": 800})

    # a model that fails is said on the new side (and recorded); counts no reader can hold
    # are shown as unknown, not as numbers
    fake_llm.key = "sk-another-key"  # the server's key is refused upstream: a 401
    try:
        page.get_by_role("button", name="Send").click()
        expect(new).to_contain_text("The model call failed (auth)")
    finally:
        fake_llm.key = None
    expect(new.get_by_role("alert")).to_contain_text("Incorrect API key")
    expect(original).to_contain_text("Paris.")
    fake_llm.script(
        Reply(content="odd usage", usage_json='{"prompt_tokens": 1e999, "completion_tokens": -1}')
    )
    page.get_by_role("button", name="Send").click()
    expect(new).to_contain_text("odd usage")
    expect(new).to_contain_text("unknown prompt (0 cached), unknown completion")
    expect(page.get_by_role("region", name="Runs of this call (3)")).to_contain_text("failed: auth")

    # the new session: linked to the call it came from, its call in the timeline
    new.get_by_role("link", name=re.compile(r"^Open the new session")).click()
    page.wait_for_url(re.compile(r"#/sessions/[0-9a-f-]{36}$"))
    run = page.url.rsplit("/", 1)[-1]
    assert run != session
    expect(page.locator(".event.created .from-call")).to_contain_text(
        "Playground run of call #2 of " + session[:8]
    )
    expect(page.locator(".event.llm")).to_have_count(1)
    page.get_by_role("button", name="Verify").click()
    expect(page.locator(".verify")).to_contain_text("intact (2 events)")

    # the original session lists the runs made from its calls
    page.goto(f"/#/sessions/{session}")
    runs = page.get_by_role("region", name="Playground runs of this session's calls")
    expect(runs.get_by_role("link", name=run[:8])).to_be_visible()
    expect(runs).to_contain_text("from call #2")
