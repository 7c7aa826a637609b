"""A session whose text holds lone surrogates (the task, the model's reply, a command, its
output, an MCP call) opens on the page: every event drawn, the surrogate shown as U+FFFD.
Before, its events page answered 500 and the page showed no event of it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from uuid import UUID

from playwright.sync_api import Page, expect

from app.events.masking import SecretMasker
from app.store import EventStore
from tests.support.browser import open_sign_in_link
from tests.support.chronicle_server import ServerProcess
from tests.support.surrogate_sessions import write_surrogate_session


async def written(database_url: str) -> tuple[UUID, int]:
    async with await EventStore.open(database_url, masker=SecretMasker({})) as store:
        session = await write_surrogate_session(store)
        return session, await store.last_seq(session)


def test_the_page_shows_a_session_with_lone_surrogates(
    server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    # the store's connection in a thread of its own: Playwright's sync API runs a loop here
    with ThreadPoolExecutor(1) as pool:
        work = pool.submit(asyncio.run, written(server.env["CHRONICLE_DATABASE_URL"]))
        session, last = work.result()
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(server.token("surrogates", admin=True)))
    page.goto(f"/#/sessions/{session}")
    expect(page.locator(f'.event[data-seq="{last}"]')).to_be_attached()
    # the page holds the text as JSON gave it (the surrogate a UTF-16 code unit of its own, one
    # "." of a pattern); the screen draws it as U+FFFD
    command = page.locator('.event[data-kind="run"]')
    expect(command).to_contain_text(re.compile(r"\$ cat caf.\.txt"))
    expect(command).to_contain_text(re.compile(r"caf. says hello"))
    expect(page.locator('.event[data-kind="message"]').first).to_contain_text(
        re.compile(r"Rename caf.\.txt")
    )
    expect(page.locator('.event[data-kind="mcp.call"]')).to_contain_text(re.compile(". alone"))
