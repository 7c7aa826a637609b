"""The usage page (#/usage) in a real browser: an admin sees everyone's cost, calls and tokens
by day, model and user as charts and tables (an unpriced model's cost written as unknown,
numbers right-aligned) and picks one user; a range without calls says so in each chart; a
member sees only their own usage and picks nobody."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.support.browser import open_sign_in_link, screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess
from tests.support.usage_workload import record


def test_usage_by_day_model_and_user_for_an_admin_and_a_member(
    server: ServerProcess, new_page: Callable[..., Page], screenshots: Path
) -> None:
    mia = server.token("mia")
    server.token("bob")
    admin_token = server.token("root", admin=True)
    with ThreadPoolExecutor(1) as pool:
        pool.submit(
            asyncio.run,
            record(server.env["CHRONICLE_DATABASE_URL"], {"mia": "mia", "bob": "bob"}),
        ).result()

    admin = new_page()
    open_sign_in_link(admin, server.sign_in_path(admin_token))
    admin.get_by_role("link", name="Usage").click()
    expect(admin.get_by_role("heading", name="Usage", exact=True)).to_be_visible()
    today = datetime.now(UTC).date()
    expect(admin.get_by_label("To (UTC day)")).to_have_value(today.isoformat())
    expect(admin.get_by_label("From (UTC day)")).to_have_value(
        (today - timedelta(days=29)).isoformat()
    )
    facts = admin.locator(".usage-facts")
    # $0.50 + $0.25 priced, bob's call unpriced: a lower bound, as format.js's cost() writes it
    expect(facts).to_contain_text("≥$0.7500")
    expect(facts).to_contain_text("4 (1 failed)")
    expect(facts).to_contain_text("2 of 3")  # tool failures: mia's exit 1 and bob's error
    for chart in ("Cost per day (USD)", "Model calls per day", "Tokens per day"):
        expect(admin.get_by_role("img", name=chart)).to_be_visible()
    expect(admin.get_by_role("img", name="By model: cost (USD)")).to_be_visible()
    models = admin.locator("table.by-model tbody tr")
    expect(models).to_have_count(2)
    expect(models.filter(has_text="openai/m2").locator("td").last).to_have_text("unknown")
    expect(models.filter(has_text="openai/m1").locator("td").last).to_have_text("$0.7500")
    users = admin.locator("table.by-user tbody tr")
    expect(users).to_have_count(3)
    expect(users.filter(has_text="no owner")).to_contain_text("$0.2500")
    cell = admin.locator("table.by-day tbody td.num").first
    assert cell.evaluate("c => getComputedStyle(c).textAlign") == "right"
    header = admin.locator("table.by-day thead th.num").first
    assert header.evaluate("c => getComputedStyle(c).textAlign") == "right"
    screenshot_at_both_widths(admin, "usage", screenshots)

    admin.get_by_label("User", exact=True).select_option("bob")
    admin.get_by_role("button", name="Show").click()
    admin.wait_for_url("**/#/usage?**user=bob")
    expect(models).to_have_count(1)
    expect(models.first).to_contain_text("openai/m2")
    expect(facts).to_contain_text("unknown")
    expect(admin.get_by_label("User", exact=True)).to_have_value("bob")

    before = (today - timedelta(days=3)).isoformat()
    admin.goto(f"/#/usage?from={before}&to={(today - timedelta(days=1)).isoformat()}")
    expect(admin.get_by_text("No priced model call in these days.")).to_be_visible()
    expect(admin.get_by_text("No tokens in these days.")).to_be_visible()
    expect(admin.locator("table.by-model tbody")).to_contain_text("None in these days.")
    expect(facts).to_contain_text("$0")

    member = new_page()
    open_sign_in_link(member, server.sign_in_path(mia))
    member.get_by_role("link", name="Usage").click()
    expect(member.locator(".usage-facts")).to_contain_text("$0.5000")
    expect(member.locator("table.by-model tbody tr")).to_have_count(1)
    expect(member.locator("table.by-user tbody tr")).to_have_count(1)
    expect(member.locator("table.by-user tbody tr")).to_contain_text("mia")
    expect(member.get_by_label("User", exact=True)).to_have_count(0)
