"""The sessions list as a workbench: an evaluation run's trials under a row of their run with
their task and epoch, replays saying how they went (matched, diverged, requests differed),
totals over every session the filters pass, columns sorted by the API, run, task, date and
id filters, and on a phone two lines a session with the filters folded."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from app.events import AgentState, Event, LlmCall, SessionCreated
from app.events.llm import LlmUsage
from app.events.replay import ReplayResultEvent
from tests.support.browser import open_sign_in_link, screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess
from tests.support.long_sessions import append, run_async

RUN = "nightly"


def call(usd: float | None, tokens: int) -> LlmCall:
    usage = LlmUsage(prompt_tokens=tokens, completion_tokens=tokens // 10)
    return LlmCall(model="openai/m", fingerprint="f", usage=usage, cost_usd=usd)


def trial(title: str, task: str, epoch: int, usd: float) -> list[Event]:
    config = {"evaluation_run": RUN, "evaluation_task": {"id": task}, "evaluation_epoch": epoch}
    return [SessionCreated(title=title, config=config), call(usd, 1000),
            AgentState(state="finished")]  # fmt: skip


def replay(source: uuid.UUID, title: str, **result: Any) -> list[Event]:
    return [
        SessionCreated(title=title, replay_of=source),
        ReplayResultEvent(replay_of=source, mode="strict", steps_recorded=1, steps_served=1,
                          steps_matched=1, model_calls=0, seconds=0.1, **result),
        AgentState(state="stopped"),
    ]  # fmt: skip


def record(server: ServerProcess) -> dict[str, uuid.UUID]:
    made: dict[str, uuid.UUID] = {}
    database = server.env["CHRONICLE_DATABASE_URL"]

    def add(name: str, events: list[Event]) -> None:
        made[name] = uuid.uuid4()
        run_async(append(database, made[name], events, 0))

    add("payroll", [SessionCreated(title="Fix the payroll export"), call(0.25, 5000),
                    AgentState(state="finished")])  # fmt: skip
    add("sort-1", trial("Sort the list, epoch 1", "sort", 1, 0.5))
    add("sort-2", trial("Sort the list, epoch 2", "sort", 2, 0.75))
    add("parse-1", trial("Parse the log", "parse", 1, 2.0))
    source = made["payroll"]
    add("matched", replay(source, "Replay that matched", matched=True))
    add("diverged", replay(source, "Replay that diverged", matched=False,
                           divergence={"kind": "request", "step": 1}))  # fmt: skip
    add("differed", replay(source, "Replay whose requests differed", matched=False,
                           differences=[{"step": 1}]))  # fmt: skip
    return made


def test_the_list_groups_sorts_filters_and_sums(
    server: ServerProcess, new_page: Callable[..., Page], screenshots: Path
) -> None:
    made = record(server)
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(server.token("lead", admin=True)))
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    totals = page.locator("#sessions-totals")
    # all seven listed (the projection catches up), summed over all of them
    expect(totals).to_contain_text("All 7 sessions: 4 model calls · 8,800 tokens", timeout=30_000)
    expect(totals).to_contain_text("$3.5000")

    # the run's trials under a row of their run, each with its task and epoch
    run_row = page.locator("tr.run-row")
    expect(run_row).to_contain_text(f"{RUN} · 3 trials listed")
    expect(run_row.get_by_role("link", name=RUN)).to_have_attribute("href", f"#/evaluations/{RUN}")
    trials = page.locator("tr.depth-1", has=page.locator(".trial-tag"))
    expect(trials).to_have_count(3)
    expect(page.locator(f"tr[data-id='{made['sort-2']}'] .trial-tag")).to_have_text(
        "sort · epoch 2"
    )
    # replays under their source, saying how they went
    for name, said in (("matched", "matched"), ("diverged", "diverged"),
                       ("differed", "requests differed")):  # fmt: skip
        expect(page.locator(f"tr[data-id='{made[name]}'] .replay-outcome")).to_have_text(said)
        expect(page.locator(f"tr[data-id='{made[name]}']")).to_have_class("branch depth-1")

    # sorted by the API: the dearest first, then the oldest first
    page.get_by_role("button", name="Cost").click()
    expect(page.locator("th[data-sort='cost']")).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#sessions-status")).to_contain_text("dearest first")
    expect(page.locator("tr[data-id] .trial-tag").first).to_have_text("parse · epoch 1")
    page.get_by_role("button", name="Age").click()  # newest, then again: oldest
    page.get_by_role("button", name="Age").click()
    expect(page.locator("th[data-sort='newest']")).to_have_attribute("aria-sort", "ascending")
    expect(page.locator("tr[data-id]").first).to_have_attribute("data-id", str(made["payroll"]))

    # one run's task; a date range; an id's first 8 characters
    page.get_by_label("Run").fill(RUN)
    page.get_by_label("Task").fill("sort")
    page.get_by_label("Task").press("Enter")
    expect(totals).to_contain_text("All 2 sessions these filters pass: 2 model calls")
    expect(totals).to_contain_text("$1.2500")
    expect(page.locator("tr[data-id]")).to_have_count(2)
    screenshot_at_both_widths(page, "sessions-list", screenshots)
    page.get_by_label("Run").fill("")
    page.get_by_label("Task").fill("")
    page.get_by_label("Task").press("Enter")
    tomorrow = (date.today() + timedelta(days=1)).isoformat()
    page.get_by_label("Started from").fill(tomorrow)
    expect(page.get_by_text("No session matches these filters.")).to_be_visible()
    page.get_by_label("Started from").fill("")
    page.get_by_label("Started from").dispatch_event("change")
    page.get_by_label("Text").fill(str(made["parse-1"])[:8])
    expect(page.locator("tr[data-id]")).to_have_count(1)
    expect(page.locator("tr[data-id]")).to_have_attribute("data-id", str(made["parse-1"]))

    # a phone: the filters folded, each session on two lines (more than 2.5 a screen)
    phone = new_page()
    phone.set_viewport_size({"width": 390, "height": 844})
    open_sign_in_link(phone, server.sign_in_path(server.token("lead", admin=True)))
    expect(phone.locator("#sessions-totals")).to_contain_text("All 7 sessions")
    expect(phone.locator("details.filters-fold")).not_to_have_attribute("open", "")
    expect(phone.get_by_label("Run")).to_be_hidden()
    heights = phone.locator("tr[data-id]").evaluate_all(
        "rows => rows.map(row => row.getBoundingClientRect().height)"
    )
    assert len(heights) == 7 and max(heights) < 844 / 4, heights

    # polling a list that does not change asks for its rows, not for the totals again
    asked: list[str] = []
    phone.on("request", lambda request: asked.append(request.url))
    phone.wait_for_timeout(7_000)  # two polls
    lists = [url for url in asked if "/api/sessions?" in url]
    assert len(lists) >= 2, asked
    assert not [url for url in lists if "totals=true" in url], lists
