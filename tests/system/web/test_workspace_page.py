"""A session's workspace (#/sessions/ID/workspace) in a real browser: the files at the end as a
tree marked added, modified and deleted, a picked file's diff, the noise the recorded diff
left out counted, the start's noise folded until asked for; another user is told there is no
such session.

The workspace is recorded by the real recorder (``capture`` / ``final_diff``) over a
directory of the test's, and appended to a session the member owns: no agent runs."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from playwright.sync_api import Page, expect

from app.events import AgentState, Message, SessionCreated
from app.events.masking import SecretMasker
from app.runtime.workspace_state import capture, final_diff
from app.sessions.sql.session_owners import record_owner
from app.sessions.sql.users import find_user
from app.store import EventStore
from tests.support.browser import open_sign_in_link, screenshot_at_both_widths
from tests.support.chronicle_server import ServerProcess


def _start(root: Path) -> None:
    root.mkdir()
    (root / "app.py").write_text("print(1)\n")
    (root / "gone.txt").write_text("bye\n")
    (root / "README").write_text("read me\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\x00start")


def _change(root: Path) -> None:
    (root / "app.py").write_text("print(2)\n")
    (root / "gone.txt").unlink()
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\x00\x01")
    (root / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\x00end")
    (root / "old.pyc").write_bytes(b"\x00\x02")
    (root / "out.bin").write_bytes(bytes(range(256)))


async def record_workspace(database_url: str, root: Path, owner: str) -> uuid.UUID:
    """A session whose run changed ``root``: app.py modified, gone.txt deleted, pkg/mod.py and
    out.bin added, and bytecode made beside them (left out of the diff)."""
    await asyncio.to_thread(_start, root)
    snapshot, baseline = await capture(root, max_bytes=1 << 20)
    assert baseline is not None
    await asyncio.to_thread(_change, root)
    try:
        change = await final_diff(baseline, reason="finished")
    finally:
        baseline.close()
    session = uuid.uuid4()
    async with await EventStore.open(database_url, masker=SecretMasker({})) as store:
        user = await find_user(store, owner)
        assert user is not None
        await record_owner(store, session, user.id)
        await store.append(
            session,
            [SessionCreated(title="tidy the module"), Message(content="tidy the module"),
             snapshot, change, AgentState(state="finished")],
            expected_seq=0,
        )  # fmt: skip
    return session


def test_the_workspace_at_the_end_with_its_diff_and_the_noise_counted(
    server: ServerProcess, new_page: Callable[..., Page], screenshots: Path, tmp_path: Path
) -> None:
    member = server.token("mia")
    with ThreadPoolExecutor(1) as pool:
        session = pool.submit(
            asyncio.run,
            record_workspace(server.env["CHRONICLE_DATABASE_URL"], tmp_path / "ws", "mia"),
        ).result()

    page = new_page()
    open_sign_in_link(page, server.sign_in_path(member))
    page.goto(f"/#/sessions/{session}")
    # the timeline's change says what it left out, and links to the workspace
    left_out = page.locator(".event[data-kind='workspace.diff'] .left-out")
    patterns = r"(__pycache__, \*\.pyc|\*\.pyc, __pycache__)"
    expect(left_out).to_have_text(re.compile(rf"^3 files left out as noise: {patterns}"))
    page.get_by_role("link", name="Workspace", exact=True).click()
    page.wait_for_url(f"**/#/sessions/{session}/workspace")
    expect(page.get_by_role("heading", name="Workspace")).to_be_visible()
    tree = page.get_by_role("navigation", name="Files at the end")
    expect(page.locator(".workspace-counts")).to_contain_text("2 added · 1 modified · 1 deleted")
    expect(tree.get_by_role("button", name="app.py (modified)")).to_have_text("Mapp.py (modified)")
    expect(tree.get_by_role("button", name="gone.txt (deleted)")).to_be_visible()
    expect(tree.get_by_role("button", name="mod.py (added)")).to_be_visible()
    expect(tree.get_by_role("button", name="README")).to_be_visible()
    # bytecode the run made or changed: counted, never in the diff
    expect(
        page.get_by_text("3 files left out of the recorded diff as noise: __pycache__, *.pyc")
    ).to_be_visible()
    expect(tree.locator("button.file", has_text="pyc")).to_have_count(0)
    # the first change is shown; another is one click away
    pane = page.locator(".file-pane")
    expect(pane.get_by_role("heading")).to_contain_text("app.py")
    expect(pane.locator("pre.diff")).to_contain_text("+print(2)")
    tree.get_by_role("button", name="out.bin (added)").click()
    expect(pane).to_contain_text("A binary file, added")
    tree.get_by_role("button", name="gone.txt (deleted)").click()
    expect(pane.locator("pre.diff")).to_contain_text("-bye")
    screenshot_at_both_widths(page, "workspace", screenshots)

    # the start's own bytecode is in the log (a fork restores it): folded, one click away
    page.get_by_label("Show 1 noise file the log holds (__pycache__)").check()
    expect(tree.get_by_role("button", name="app.cpython-311.pyc")).to_be_visible()

    other = new_page()
    open_sign_in_link(other, server.sign_in_path(server.token("bob")))
    other.goto(f"/#/sessions/{session}/workspace")
    expect(other.get_by_role("alert")).to_contain_text("no session")
    expect(other.locator(".file-tree")).to_have_count(0)
