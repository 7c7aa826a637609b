"""Chromium for the web page's tests: Debian's ``chromium`` driven by Playwright for Python.

Playwright's own browser download is not reachable from here, so the tests launch the
system's browser (``scripts/ensure-test-services`` installs the ``chromium`` package). Without
it the tests are skipped, except under ``CI=true``, where they fail and say how to install it.
Screenshots go to ``CHRONICLE_TEST_ARTIFACTS`` when it is set (a CI job keeps that directory),
else beside the test's temporary files.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.ci import IN_CI

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

#: Where Debian's ``chromium`` package puts the browser.
CHROMIUM = "/usr/bin/chromium"
#: The two widths every page is checked and photographed at: a laptop and a phone.
WIDTHS = {"desktop": (1280, 800), "phone": (390, 844)}
ARTIFACTS_VARIABLE = "CHRONICLE_TEST_ARTIFACTS"


def chromium_path() -> str:
    """The browser to launch; a skip (a failure under CI) when it is not installed."""
    found = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    if found is None:
        message = (
            f"no Chromium at {CHROMIUM}: run scripts/ensure-test-services (as root it runs "
            "apt-get install chromium), or install Debian's chromium package"
        )
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return found


def launch_chromium(playwright: Playwright) -> Browser:
    """Headless Chromium; ``--no-sandbox`` because the tests run as root here, where
    Chromium's own sandbox refuses to start."""
    return playwright.chromium.launch(
        executable_path=chromium_path(), headless=True, args=["--no-sandbox"]
    )


def artifacts_dir(fallback: Path) -> Path:
    """The screenshots' directory: ``CHRONICLE_TEST_ARTIFACTS`` or ``fallback``."""
    chosen = os.environ.get(ARTIFACTS_VARIABLE)
    directory = Path(chosen) / "web" if chosen else fallback / "screenshots"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def screenshot_at_both_widths(
    page: Page, name: str, directory: Path, *, full_page: bool = True
) -> list[Path]:
    """Photograph the page at each of ``WIDTHS`` (whole page, or the window alone for a page
    of thousands of events), back at the first width after; returns the files written. Each
    must also be readable: nothing wider than the window."""
    written = []
    safe = re.sub(r"[^a-z0-9_-]+", "-", name.lower())
    for label, (width, height) in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(100)  # a frame for the layout to settle
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 1, f"{name} at {width} px is {overflow} px wider than the window"
        path = directory / f"{safe}-{label}-{width}.png"
        page.screenshot(path=str(path), full_page=full_page)
        written.append(path)
    first_width, first_height = next(iter(WIDTHS.values()))
    page.set_viewport_size({"width": first_width, "height": first_height})
    return written


def open_sign_in_link(page: Page, link: str) -> None:
    """Open a sign-in link (``/login#code=...``) and use it, as its user does: the page asks
    "Sign in as NAME?" first (it never signs in by itself: another site can open a link too);
    a link that does not work is told at once, with nothing to press."""
    from playwright.sync_api import expect

    page.goto(link)
    use = page.get_by_role("button", name=re.compile(r"^Sign in as "))
    refused = page.get_by_text("That sign-in link did not work")
    expect(use.or_(refused)).to_be_visible()
    if use.is_visible():
        use.click()
