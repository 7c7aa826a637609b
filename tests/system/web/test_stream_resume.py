"""The timeline survives a dropped connection: the server goes away (SIGTERM) while the page
is open, comes back on the same address, and the page reconnects by itself and carries on
after the last event it had, each event shown once and none missing."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
from playwright.sync_api import Page, expect

from tests.support.browser import open_sign_in_link
from tests.support.chronicle_server import ServerProcess, start_server
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call


def test_the_timeline_resumes_after_the_server_restarts(
    server: ServerProcess, fake_llm: FakeLlmServer, new_page: Callable[..., Page]
) -> None:
    fake_llm.script(
        Reply(tool_calls=[tool_call("finish", message="done before the restart")]),
        Reply(tool_calls=[tool_call("finish", message="done after the restart")]),
    )
    token = server.token("alice")
    headers = {"Authorization": f"Bearer {token}"}
    session = httpx.post(
        f"{server.url}/api/sessions", headers=headers, json={"task": "finish twice"}
    ).json()["id"]
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(token))
    page.goto(f"/#/sessions/{session}")
    expect(page.locator(".event.finish")).to_contain_text(
        "done before the restart", timeout=120_000
    )
    expect(page.locator(".connection")).to_have_text("live")
    seen_before = page.locator(".timeline > li").count()

    server.stop()
    expect(page.locator(".connection")).to_have_text("reconnecting")
    port = str(urlsplit(server.url).port)
    again = start_server(server.env, "--port", port)
    try:
        expect(page.locator(".connection")).to_have_text("live")
        posted = httpx.post(
            f"{again.url}/api/sessions/{session}/messages",
            headers=headers,
            json={"content": "once more, please"},
        )
        assert posted.status_code == 202, posted.text
        expect(page.locator(".event.finish").last).to_contain_text(
            "done after the restart", timeout=120_000
        )
        expect(page.locator(".event.message", has_text="once more, please")).to_have_count(1)
        last_seq = httpx.get(
            f"{again.url}/api/sessions/{session}/events?limit=1", headers=headers
        ).json()["last_seq"]
        expect(page.locator(f'.timeline [data-seq="{last_seq}"]')).to_have_count(1)
        shown = [
            int(seq)
            for seq in page.locator("[data-seq]").evaluate_all(
                "nodes => nodes.map(n => n.dataset.seq)"
            )
        ]
        # every event once (a command's output is drawn inside the command, with its seq)
        assert len(shown) == len(set(shown)), f"an event was shown twice: {shown}"
        # the run may go on recording after the finish was shown (its end, the workspace's
        # change): every event up to the newest drawn, and that one at least the last read
        assert sorted(shown) == list(range(1, max(shown) + 1)), shown
        assert max(shown) >= last_seq, (shown, last_seq)
        assert len(shown) > seen_before
    finally:
        again.stop()
