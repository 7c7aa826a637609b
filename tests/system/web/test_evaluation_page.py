"""Evaluation on the page: a member starts a run from a pasted suite (a bad one is refused
with its line and field at the form), watches its progress, reads its report (the sections
`chronicle eval report` prints, the per-trial table with each failure's reason, an empty chart
that says so) and opens a failed trial, shown as one; an admin opens a run by name and
nobody else reads it; two runs compared as a flip table, a task opened side by side."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import httpx
from playwright.sync_api import Locator, Page, expect

from app.evaluation.scoring import evaluation_config
from app.evaluation.suite import Task
from app.events import AgentState, EvalScore, Event, Finish, LlmCall, Message, SessionCreated
from app.events.masking import SecretMasker
from app.store import EventStore
from tests.support.browser import open_sign_in_link, screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess
from tests.support.evaluation_api import bearer, wait_finished
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call

SUITE = """name: smoke
tasks:
  - id: multiply
    prompt: What is 6 x 7? Say it with finish.
    answer: "regex:\\\\b42\\\\b"
  - id: capital
    prompt: Which city is the capital of France? Say it with finish.
    answer: "contains:Paris"
"""
#: line 11 names a field no task has
MISSPELT = SUITE + "  - id: typo\n    prompt: p\n    chek: 'true'\n"


def evaluation_link(page: Page) -> Locator:
    """The navigation's Evaluation link (a run's breadcrumb has one too)."""
    return page.get_by_role("navigation", name="Main").get_by_role("link", name="Evaluation")


async def record_run(
    database_url: str, run: str, results: dict[str, str], epoch: int = 1
) -> list[uuid.UUID]:
    """Finished sessions of ``run``, one per task, scored as given (what `chronicle eval run`
    records), each with one model call costing $0.50 and a finish message naming it."""
    made = []
    async with await EventStore.open(database_url, masker=SecretMasker({})) as store:
        for task, label in results.items():
            events: list[Event] = [
                SessionCreated(config=evaluation_config(run, Task(id=task, prompt="p"), epoch)),
                Message(content="p"),
                LlmCall(model="m", fingerprint="f", cost_usd=0.5),
                Finish(message=f"{run} {task} epoch {epoch}", cause=3),
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


def test_a_member_starts_a_run_from_the_page_and_reads_its_report_and_a_failed_trial(
    server: ServerProcess,
    fake_llm: FakeLlmServer,
    new_page: Callable[..., Page],
    screenshots: Path,
) -> None:
    fake_llm.script(
        # slow enough for the progress to be seen before the first trial is scored
        Reply(tool_calls=[tool_call("finish", message="42")], delay=2),
        Reply(tool_calls=[tool_call("finish", message="Lyon")]),
    )
    page = new_page()
    open_sign_in_link(page, server.sign_in_path(server.token("ada")))
    evaluation_link(page).click()
    # no run yet: the form is open, not a pointer to the command line
    expect(page.get_by_label("Suite (YAML)")).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("chronicle eval run SUITE")
    page.get_by_label("Run name").fill("smoke-1")
    page.get_by_label("Suite (YAML)").fill(MISSPELT)
    page.get_by_role("button", name="Start the run").click()
    problems = page.locator(".suite-problems")
    expect(problems).to_contain_text("Line 11")
    expect(problems).to_contain_text("task 'typo', field 'chek': is not a known field")
    expect(page.locator(".traceback, pre")).to_have_count(0)
    screenshot_at_both_widths(page, "evaluation-start-error", screenshots)

    page.get_by_label("Suite (YAML)").fill(SUITE)
    page.get_by_role("button", name="Start the run").click()
    page.wait_for_url("**/#/evaluations/smoke-1%40*")
    expect(page.locator(".progress-counts")).to_contain_text("0 done")
    expect(page.locator(".progress-counts")).to_contain_text("1 left · 2 in all")
    screenshot_at_both_widths(page, "evaluation-progress", screenshots)

    # the report once both trials are scored, with everything `chronicle eval report` prints
    expect(page.locator(".pass-rate")).to_have_text("50.0%")
    expect(page.locator(".run-progress")).to_have_count(0)
    facts = page.locator(".report-facts")
    expect(facts.locator('dd[data-fact="Endings"]')).to_have_text("finished 2")
    expect(facts.locator('dd[data-fact="Tokens"]')).to_have_text("200 in, 40 out (2 model calls)")
    expect(facts.locator('dd[data-fact="Model latency"]')).to_contain_text("p95")
    for fact in ("Cost", "Steps", "Wall time", "Tool errors"):
        expect(facts.locator(f'dd[data-fact="{fact}"]')).not_to_be_empty()
    trials = page.locator("table.trials tbody tr")
    expect(trials).to_have_count(2)
    failed = trials.filter(has_text="capital")
    expect(failed.locator(".verdict")).to_have_text("✗ failed")
    expect(failed.locator(".reason")).to_contain_text("answer: fail - ")
    expect(failed.locator(".reason")).to_contain_text("Lyon")
    expect(trials.filter(has_text="multiply").locator(".verdict")).to_have_text("✓ passed")
    expect(page.locator("table.trials th", has_text="Steps")).to_have_css("text-align", "right")
    expect(page.locator("table.trials td.num").first).to_have_css("text-align", "right")
    # the fake model has no price: the cost chart says so instead of drawing nothing
    expect(page.locator(".chart-empty")).to_contain_text("no model call had a known price")
    screenshot_at_both_widths(page, "evaluation-report", screenshots)

    # the failed trial, shown as a trial
    failed.get_by_role("link", name="session of capital epoch 1").click()
    expect(page.locator("#trial-verdict")).to_have_text("✗ failed")
    expect(page.locator("#session-state")).to_have_text("finished")
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    expect(crumbs).to_contain_text("capital · epoch 1")
    answer = page.locator(".event.score-fail .score-line", has_text="answer")
    expect(answer).to_contain_text("answer: fail - ")
    expect(page.locator(".event.score-pass .score-line").first).to_contain_text("finished: pass - ")
    screenshot_at_both_widths(page, "evaluation-trial", screenshots)
    crumbs.get_by_role("link", name="smoke-1").click()
    expect(page.locator(".pass-rate")).to_have_text("50.0%")

    # another run starts from this one's suite, or from a file
    evaluation_link(page).click()
    page.get_by_text("Start a run", exact=True).click()
    earlier = page.get_by_label("Or start from an earlier run's suite")
    earlier.select_option(label="smoke-1 (openai/fake-model)")
    expect(page.get_by_label("Suite (YAML)")).to_have_value(re.compile("id: capital"))
    page.get_by_label("Upload a suite file").set_input_files(
        files=[{"name": "s.yaml", "mimeType": "text/yaml", "buffer": MISSPELT.encode()}]
    )
    expect(page.get_by_label("Suite (YAML)")).to_have_value(re.compile("chek"))


def test_an_admin_reads_a_runs_report_and_nobody_else(
    server: ServerProcess, new_page: Callable[..., Page]
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
    evaluation_link(admin).click()
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
    rows.filter(has_text="fix-the-bug").get_by_role("link").click()
    admin.wait_for_url(f"**/#/sessions/{sessions[0]}")
    expect(admin.locator(".event.finish")).to_contain_text("nightly fix-the-bug epoch 1")

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
    evaluation_link(admin).click()
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

    # a task of both runs side by side, an epoch picked per side
    with ThreadPoolExecutor(1) as pool:
        for run in ("nightly", "tuned"):
            pool.submit(asyncio.run, record_run(database, run, {"add-a-test": "pass"}, 2)).result()
    admin.goto("/#/evaluations/nightly/vs/tuned")
    admin.get_by_role("link", name="add-a-test side by side").click()
    admin.wait_for_url("**/#/evaluations/nightly/vs/tuned/tasks/add-a-test")
    left, right = admin.locator(".side.run-a"), admin.locator(".side.run-b")
    expect(left.get_by_role("heading")).to_contain_text("A nightly · epoch 1")
    expect(left.locator(".event.finish")).to_contain_text("nightly add-a-test epoch 1")
    expect(right.locator(".event.finish")).to_contain_text("tuned add-a-test epoch 1")
    expect(right.locator(".event.score")).to_contain_text("finished: pass - e")
    admin.get_by_label("Epoch in B").select_option(label="epoch 2 · passed")
    expect(right.locator(".event.finish")).to_contain_text("tuned add-a-test epoch 2")
    expect(left.locator(".event.finish")).to_contain_text("nightly add-a-test epoch 1")
    admin.get_by_role("button", name="step 0").click()
    expect(right.locator(".event.message")).to_be_visible()
    admin.keyboard.press("]")
    expect(right.locator(".event.finish")).to_be_visible()
    screenshot_at_both_widths(admin, "evaluation-side-by-side", screenshots)


def test_an_admin_opens_each_of_two_users_runs_of_one_name(
    server: ServerProcess, fake_llm: FakeLlmServer, new_page: Callable[..., Page]
) -> None:
    """A run's name is its owner's: the list links each row by its key, so an admin reaches
    either user's "nightly" (the bare name is ambiguous to an admin: 409)."""
    # each trial finishes at its first call (unscripted, every call would fail and be retried)
    fake_llm.script(*[Reply(tool_calls=[tool_call("finish", message="audited")])] * 2)
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
    evaluation_link(admin).click()
    rows = admin.locator("table.runs-table tbody tr")
    expect(rows).to_have_count(2)
    for user in ("alice", "bob"):
        evaluation_link(admin).click()
        rows.filter(has_text=f"by {user}").get_by_role("link", name="nightly").click()
        admin.wait_for_url(f"**/#/evaluations/{quote(runs[user]['key'], safe='')}")
        expect(admin.locator(".report")).to_contain_text("of 1")
        expect(admin.get_by_role("alert")).to_have_count(0)
