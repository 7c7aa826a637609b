"""An evaluation run's report on the page: an admin opens it by name and sees the pass rate
with its interval, the per-task table linking each session, and the steps and cost charts;
another user is told there is no such run."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import httpx
from playwright.sync_api import Page, expect

from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Task
from app.events import AgentState, EvalScore, Event, Finish, LlmCall, Message, SessionCreated
from app.events.masking import SecretMasker
from app.store import EventStore
from tests.support.browser import open_sign_in_link, screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess
from tests.support.evaluation_api import bearer, wait_finished


async def record_run(database_url: str, run: str, results: dict[str, str]) -> list[uuid.UUID]:
    """Finished sessions of ``run``, one per task, scored as given (what `chronicle eval run`
    records), each with one model call costing $0.50."""
    made = []
    async with await EventStore.open(database_url, masker=SecretMasker({})) as store:
        for task, label in results.items():
            events: list[Event] = [
                SessionCreated(config=evaluation_config(run, Task(id=task, prompt="p"), 1)),
                Message(content="p"),
                LlmCall(model="m", fingerprint="f", cost_usd=0.5),
                Finish(message="done", cause=3),
                AgentState(state="finished"),
            ]
            events.append(
                EvalScore(name="finished", scorer_version=1, score_label=label,
                          score_value=float(label == "pass"), explanation="e",
                          scored_seq=len(events), evaluation_run=run)
            )  # fmt: skip
            session = uuid.uuid4()
            await store.append(session, events, expected_seq=0)
            made.append(session)
    return made


def test_an_admin_reads_a_runs_report_and_nobody_else(
    server: ServerProcess, new_page: Callable[..., Page], screenshots: Path
) -> None:
    # in a thread of its own: Playwright's sync API keeps an event loop running in this one
    with ThreadPoolExecutor(1) as pool:
        sessions = pool.submit(
            asyncio.run,
            record_run(
                server.env["CHRONICLE_DATABASE_URL"],
                "nightly",
                {"fix-the-bug": "pass", "add-a-test": "fail", "rename-it": "pass"},
            ),
        ).result()
    admin = new_page()
    open_sign_in_link(admin, server.sign_in_path(server.token("evaluator", admin=True)))
    admin.get_by_role("link", name="Evaluation").click()
    admin.get_by_label("Evaluation run").fill("nightly")
    admin.get_by_role("button", name="Open report").click()
    expect(admin.locator(".pass-rate")).to_have_text("66.7%")
    expect(admin.locator(".report")).to_contain_text("2 of 3")
    expect(admin.get_by_role("img", name="pass rate 66.7%")).to_be_visible()
    rows = admin.locator("table.tasks tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.filter(has_text="add-a-test")).to_contain_text("0 / 1")
    expect(admin.get_by_role("img", name="Steps per task")).to_be_visible()
    expect(admin.get_by_role("img", name="Cost per task (USD)")).to_be_visible()
    screenshot_at_both_widths(admin, "evaluation-report", screenshots)
    rows.filter(has_text="fix-the-bug").get_by_role("link").click()
    admin.wait_for_url(f"**/#/sessions/{sessions[0]}")
    expect(admin.locator(".event.finish")).to_contain_text("done")

    someone = new_page()
    open_sign_in_link(someone, server.sign_in_path(server.token("someone")))
    someone.goto("/#/evaluations/nightly")
    expect(someone.get_by_role("alert")).to_contain_text("no evaluation run 'nightly'")
    expect(someone.locator("table.tasks")).to_have_count(0)


def test_the_runs_list_and_two_runs_compared_as_a_flip_table(
    server: ServerProcess, new_page: Callable[..., Page], screenshots: Path
) -> None:
    database = server.env["CHRONICLE_DATABASE_URL"]
    with ThreadPoolExecutor(1) as pool:
        nightly = pool.submit(
            asyncio.run,
            record_run(
                database,
                "nightly",
                {"fix-the-bug": "pass", "add-a-test": "fail", "rename-it": "pass", "docs": "fail"},
            ),
        ).result()
        tuned = pool.submit(
            asyncio.run,
            record_run(
                database,
                "tuned",
                {"fix-the-bug": "fail", "add-a-test": "pass", "rename-it": "pass", "docs": "fail"},
            ),
        ).result()
    admin = new_page()
    open_sign_in_link(admin, server.sign_in_path(server.token("evaluator", admin=True)))
    admin.get_by_role("link", name="Evaluation").click()
    runs = admin.locator("table.runs-table tbody tr")
    expect(runs).to_have_count(2)
    # 2 of 4 passed: 50.0%, Wilson's 95% interval 15.0%-85.0% (as chronicle eval report says)
    row = runs.filter(has_text="nightly")
    expect(row.locator(".pass-rate-cell")).to_have_text("50.0% (2 of 4)")
    expect(row).to_contain_text("15.0%\u201385.0%")
    expect(row.get_by_role("img", name="50.0%, 95% interval 15.0% to 85.0%")).to_be_visible()
    screenshot_at_both_widths(admin, "evaluation-runs", screenshots)

    admin.get_by_label("pick nightly to compare").check()
    admin.get_by_label("pick tuned to compare").check()
    admin.get_by_role("button", name="Compare the two picked runs").click()
    admin.wait_for_url("**/#/evaluations/nightly/vs/tuned")
    flips = admin.locator("table.flips tbody tr")
    expect(flips).to_have_count(4)
    regressed = flips.filter(has_text="fix-the-bug")
    expect(regressed).to_contain_text("regressed")
    expect(regressed.locator("td").nth(1)).to_contain_text("✓ passed")
    expect(regressed.locator("td").nth(2)).to_contain_text("✗ failed")
    expect(flips.filter(has_text="add-a-test")).to_contain_text("newly passing")
    expect(flips.filter(has_text="rename-it")).to_contain_text("passed in both")
    expect(flips.filter(has_text="docs")).to_contain_text("failed in both")
    expect(admin.locator(".difference")).to_have_text("±0.0%")
    expect(admin.locator(".flip-counts")).to_contain_text("1 regressed · 1 newly passing")
    screenshot_at_both_widths(admin, "evaluation-compare", screenshots)
    # each task's cell links to its session in that run
    regressed.get_by_role("link", name="session 1 of fix-the-bug in run B").click()
    admin.wait_for_url(f"**/#/sessions/{tuned[0]}")
    assert nightly[0] != tuned[0]


def test_an_admin_opens_each_of_two_users_runs_of_one_name(
    server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    """A run's name is its owner's: the list links each row by its key, so an admin reaches
    either user's "nightly" (the bare name is ambiguous to an admin: 409)."""
    suite = {"name": "s", "tasks": [{"id": "payroll", "prompt": "audit payroll.py"}]}
    runs = {}
    for user in ("alice", "bob"):
        token = server.token(user)
        started = httpx.post(
            f"{server.url}/api/evaluations",
            headers=bearer(token),
            json={"name": "nightly", "suite": suite},
            timeout=30,
        )
        assert started.status_code == 202, started.text
        runs[user] = wait_finished(server.url, token, "nightly")
    admin = new_page()
    open_sign_in_link(admin, server.sign_in_path(server.token("evaluator", admin=True)))
    admin.get_by_role("link", name="Evaluation").click()
    rows = admin.locator("table.runs-table tbody tr")
    expect(rows).to_have_count(2)
    for user in ("alice", "bob"):
        admin.get_by_role("link", name="Evaluation").click()
        rows.filter(has_text=f"by {user}").get_by_role("link", name="nightly").click()
        admin.wait_for_url(f"**/#/evaluations/{quote(runs[user]['key'], safe='')}")
        expect(admin.locator(".report")).to_contain_text("of 1")
        expect(admin.get_by_role("alert")).to_have_count(0)
