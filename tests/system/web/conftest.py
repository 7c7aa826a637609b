"""The web page in a real browser: headless Chromium (Playwright) against a real
``chronicle serve`` (API, workers and projections in one process) on a database of the
test's own, its agents talking to the scripted model server."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.support.agent_cli import agent_environment
from tests.support.browser import artifacts_dir, launch_chromium
from tests.support.chronicle_server import ServerProcess, start_server
from tests.support.fake_llm import FakeLlmServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
#: An agent's first step starts its sandbox and loads the model client: seconds, not one.
expect.set_options(timeout=30_000)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium per test module (a context per test keeps their cookies apart)."""
    with sync_playwright() as playwright:
        launched = launch_chromium(playwright)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def server(
    fake_llm: FakeLlmServer, app_database_url: str, database_url: str, tmp_path: Path
) -> Iterator[ServerProcess]:
    """``chronicle serve`` whose workers run sessions against the scripted model; the CLI that
    makes tokens has the owner's login too (only it makes admins)."""
    env = agent_environment(
        fake_llm,
        app_database_url,
        tmp_path,
        CHRONICLE_WORKER_LEASE_DURATION="3",
        CHRONICLE_WORKER_HEARTBEAT_INTERVAL="0.5",
        CHRONICLE_OWNER_DATABASE_URL=database_url,
    )
    started = start_server(env)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where this test's screenshots go (see tests/support/browser.py)."""
    return artifacts_dir(tmp_path)


@pytest.fixture
def new_page(browser: Browser, server: ServerProcess) -> Iterator[Callable[..., Page]]:
    """``new_page(timezone_id=...)``: a page in a fresh browser context (cookies of its own)
    on the server's address, 1280 px wide; a script error on any page fails the test."""
    contexts: list[BrowserContext] = []
    errors: list[str] = []

    def make(timezone_id: str = "UTC") -> Page:
        context = browser.new_context(
            base_url=server.url, viewport={"width": 1280, "height": 800}, timezone_id=timezone_id
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("pageerror", lambda error: errors.append(str(error)))
        return page

    yield make
    for context in contexts:
        context.close()
    assert errors == [], f"the page threw: {errors}"
