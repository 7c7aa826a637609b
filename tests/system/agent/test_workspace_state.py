"""A session records its workspace at the start (workspace.snapshot) and the change its run
made at the end (workspace.diff): real sessions with a local sandbox over a plain directory
and a git repository (dirty tree, untracked file, binary file, a file over the budget).

The diff is checked the way forking and offline scoring use it: the recorded start is
rebuilt in a fresh directory, the diff applied with ``git apply``, and the result compared
with the workspace's final tree, file by file.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from app.events import WorkspaceFile, WorkspaceSnapshot
from app.runtime.workspace_restore import apply_change, restore
from app.runtime.workspace_state import (
    WorkspaceStateError,
    capture,
    empty_snapshot,
    final_diff,
    is_empty_directory,
)
from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.waiting import wait_for_event

BINARY = bytes(range(256)) * 4
BUDGET = 64 * 1024

#: The agent edits a file, writes a binary one, deletes one and creates one.
CHANGES = [
    Reply(
        tool_calls=[
            tool_call(
                "execute_bash",
                command="printf 'changed\\n' > notes.txt && rm -f gone.txt && "
                "python3 -c \"open('out.bin','wb').write(bytes(range(255,-1,-1)))\" && "
                "mkdir -p sub && echo new > sub/new.txt && echo grown >> big.log",
            )
        ]
    ),
    Reply(tool_calls=[tool_call("finish", message="done")]),
]


def _git(repo: Path, *args: str) -> str:
    """git in ``repo``, whoever owns it (run as root, a restore hands it to the sandbox uid)."""
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "safe.directory=*", "-c", "user.email=t@example.com",
         "-c", "user.name=t", *args],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip


def _tree(root: Path, *, leave_out: frozenset[str] = frozenset()) -> dict[str, bytes]:
    """Every file under ``root`` but .git and ``leave_out``, as bytes (links as their target)."""
    found: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if rel in leave_out:
                continue
            found[rel] = os.readlink(full).encode() if full.is_symlink() else full.read_bytes()
    return found


async def _recorded(store: EventStore, session: object) -> tuple[WorkspaceSnapshot, dict]:  # type: ignore[type-arg]
    events = await store.read(session)  # type: ignore[arg-type]
    snapshots = [e for e in events if e.kind == "workspace.snapshot"]
    diffs = [e for e in events if e.kind == "workspace.diff"]
    assert len(snapshots) == 1 and len(diffs) == 1
    assert events[-1].kind == "workspace.diff", "the change is recorded when the run ends"
    return WorkspaceSnapshot.model_validate(snapshots[0].payload), diffs[0].payload


def _apply(diff: str, start: Path) -> None:
    subprocess.run(
        ["git", "apply", "--binary", "-"], cwd=start, check=True,
        input=diff.encode("utf-8", errors="surrogateescape"), capture_output=True,
    )  # fmt: skip


def _fill(workspace: Path) -> None:
    workspace.mkdir()
    (workspace / "notes.txt").write_text("first\n")
    (workspace / "gone.txt").write_text("to be deleted\n")
    (workspace / "data.bin").write_bytes(BINARY)
    (workspace / "big.log").write_bytes(b"x" * (BUDGET + 1))
    os.symlink("/etc/hostname", workspace / "outside")  # recorded as a link, never read


async def test_plain_directory_manifest_and_final_diff(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    _fill(workspace)
    fake_llm.script(*CHANGES)
    settings = settings_for(fake_llm, tmp_path, workspace_snapshot_max_bytes=BUDGET)
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=workspace), task="change things"
    )
    assert outcome == "finished"
    snapshot, diff = await _recorded(store, session)

    assert snapshot.vcs == "none" and snapshot.max_bytes == BUDGET
    files = {f.path: f for f in snapshot.files}
    assert set(files) == {"notes.txt", "gone.txt", "data.bin", "outside"}
    assert files["notes.txt"].encoding == "text" and files["notes.txt"].content == "first\n"
    assert files["data.bin"].encoding == "base64" and files["data.bin"].size == len(BINARY)
    assert files["outside"].type == "symlink" and files["outside"].content == "/etc/hostname"
    assert [(s.path, s.size) for s in snapshot.skipped] == [("big.log", BUDGET + 1)]
    assert "budget" in snapshot.skipped[0].reason

    assert diff["reason"] == "finished"
    assert sorted(diff["changed"]) == ["gone.txt", "notes.txt", "out.bin", "sub/new.txt"]
    assert [s["path"] for s in diff["skipped"]] == ["big.log"]
    start = tmp_path / "start"
    await restore(snapshot, start, repository=None)
    made_later = frozenset({"big.log", "out.bin", "sub/new.txt"})
    assert _tree(start) == _tree(workspace, leave_out=made_later) | {
        "notes.txt": b"first\n", "gone.txt": b"to be deleted\n"
    }  # fmt: skip
    _apply(diff["diff"], start)
    assert _tree(start) == _tree(workspace, leave_out=frozenset({"big.log"}))
    assert (start / "out.bin").read_bytes() == bytes(range(255, -1, -1))
    assert (await store.verify(session)).ok


@pytest.mark.parametrize("runtime", ["local", "docker"])
async def test_git_repository_commit_branch_dirty_tree_and_final_diff(
    runtime: str,
    request: pytest.FixtureRequest,
    store: EventStore,
    fake_llm: FakeLlmServer,
    tmp_path: Path,
) -> None:
    """The workspace is read from the host's path: the local jail's directory, or the Docker
    sandbox's bind mount (whose files then belong to the sandbox's uid)."""
    if runtime == "docker":
        request.getfixturevalue("docker_ready")
    workspace = tmp_path / "repo"
    _fill(workspace)
    (workspace / ".gitignore").write_text("*.tmp\n")
    _git(workspace, "init", "-q", "-b", "feature")
    _git(workspace, "add", "notes.txt", "gone.txt", "data.bin", ".gitignore")
    _git(workspace, "commit", "-q", "-m", "start")
    commit = _git(workspace, "rev-parse", "HEAD").strip()
    # Dirty: a changed tracked text file and binary file, an untracked file, an ignored one.
    (workspace / "notes.txt").write_text("first, edited before the session\n")
    (workspace / "data.bin").write_bytes(BINARY[::-1])
    (workspace / "untracked.txt").write_text("not committed\n")
    (workspace / "scratch.tmp").write_text("ignored\n")
    fake_llm.script(*CHANGES)
    settings = settings_for(fake_llm, tmp_path, workspace_snapshot_max_bytes=BUDGET)
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=workspace, runtime=runtime), task="change things"
    )
    assert outcome == "finished"
    snapshot, diff = await _recorded(store, session)

    assert snapshot.vcs == "git" and snapshot.commit == commit and snapshot.branch == "feature"
    assert "b/notes.txt" in snapshot.diff and "b/untracked.txt" in snapshot.diff
    assert "GIT binary patch" in snapshot.diff and "scratch.tmp" not in snapshot.diff
    assert [(s.path, s.size) for s in snapshot.skipped] == [("big.log", BUDGET + 1)]
    assert not (workspace / ".git" / "index.lock").exists()

    start = tmp_path / "start"
    await restore(snapshot, start, repository=workspace)
    assert _git(start, "rev-parse", "HEAD").strip() == commit
    assert _git(start, "symbolic-ref", "--short", "HEAD").strip() == "feature"
    assert (start / "notes.txt").read_text() == "first, edited before the session\n"
    assert (start / "data.bin").read_bytes() == BINARY[::-1]
    assert (start / "untracked.txt").read_text() == "not committed\n"

    assert diff["reason"] == "finished"
    assert sorted(diff["changed"]) == ["gone.txt", "notes.txt", "out.bin", "sub/new.txt"]
    _apply(diff["diff"], start)
    ignored_or_skipped = frozenset({"big.log", "scratch.tmp", "outside"})
    assert _tree(start, leave_out=ignored_or_skipped) == _tree(
        workspace, leave_out=ignored_or_skipped
    )
    assert (await store.verify(session)).ok


async def test_resumed_run_diffs_against_the_recorded_start(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    """A second run (resume, another process in real life: only the log is shared) records
    the whole change since the session's start, not since the resume."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a\n")
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo one > one.txt")]),
        Reply(content="Anything else?"),
        Reply(tool_calls=[tool_call("execute_bash", command="echo two > two.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    settings = settings_for(fake_llm, tmp_path)
    session, first = await run_session(
        store, settings, SessionOptions(workspace=workspace), task="one"
    )
    assert first == "awaiting_user_input"
    _, second = await run_session(store, settings, SessionOptions(), task="two", session_id=session)
    assert second == "finished"
    diffs = [e.payload for e in await store.read(session) if e.kind == "workspace.diff"]
    assert [d["reason"] for d in diffs] == ["awaiting_user_input", "finished"]
    assert diffs[0]["changed"] == ["one.txt"]
    assert diffs[1]["changed"] == ["one.txt", "two.txt"]


async def test_interrupted_run_still_records_its_change(
    store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    """A run cancelled mid-command (SIGINT does this) records workspace.diff with reason
    ``interrupted`` before it stops: what the agent wrote before the interruption is in it."""
    workspace = tmp_path / "ws"
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo early > early.txt")]),
        Reply(tool_calls=[tool_call("execute_bash", command="sleep 60")]),
    )
    session = uuid.uuid4()
    running = asyncio.create_task(
        run_session(
            store,
            settings_for(fake_llm, tmp_path),
            SessionOptions(workspace=workspace),
            task="write then wait",
            session_id=session,
        )
    )
    await wait_for_event(
        store, session, lambda e: e.kind == "run" and "sleep" in e.payload["command"]
    )
    running.cancel("interrupted by SIGINT")
    with pytest.raises(asyncio.CancelledError):
        await running
    [diff] = [e.payload for e in await store.read(session) if e.kind == "workspace.diff"]
    assert diff["reason"] == "interrupted"
    assert diff["changed"] == ["early.txt"] and "+early" in diff["diff"]


async def test_a_hostile_repository_runs_nothing_and_a_hostile_snapshot_writes_nowhere(
    tmp_path: Path,
) -> None:
    """The workspace repository's configuration names commands (a clean filter, an fsmonitor
    hook) that git would run on `git add` / `git status` inside it; recording reads the
    workspace through a git directory of its own, so neither runs. A snapshot from the log
    naming a path outside the target is refused. (With `git add` run in the workspace's own
    repository, the marker file would exist.)"""
    workspace = tmp_path / "repo"
    workspace.mkdir()
    marker = tmp_path / "ran"
    _git(workspace, "init", "-q")
    _git(workspace, "config", "filter.evil.clean", f"touch {marker}; cat")
    _git(workspace, "config", "core.fsmonitor", f"touch {marker}; true")
    (workspace / ".gitattributes").write_text("* filter=evil\n")
    (workspace / "a.txt").write_text("a\n")
    # Owned by another uid, as a Docker sandbox's workspace is: still read.
    for path in [workspace, *workspace.rglob("*")]:
        os.chown(path, 10001, 10001, follow_symlinks=False)
    snapshot, baseline = await capture(workspace, max_bytes=BUDGET)
    assert baseline is not None
    (workspace / "a.txt").write_text("b\n")
    diff = await final_diff(baseline, reason="finished")
    baseline.close()
    assert not marker.exists()
    assert snapshot.vcs == "git" and "b/a.txt" in snapshot.diff and diff.changed == ["a.txt"]

    hostile = WorkspaceSnapshot(
        vcs="none",
        files=[WorkspaceFile(
            path="../escaped.txt", type="file", size=1, sha256="", encoding="text", content="x"
        )],
    )  # fmt: skip
    with pytest.raises(WorkspaceStateError, match="cannot be restored safely"):
        await restore(hostile, tmp_path / "target", repository=None)
    assert not (tmp_path / "escaped.txt").exists()


@pytest.mark.parametrize("vcs", ["none", "git"])
async def test_noise_is_left_out_of_the_diff_and_a_restored_end_keeps_its_start(
    vcs: str, tmp_path: Path
) -> None:
    """``__pycache__`` and ``*.pyc`` made or changed by the run are not in the diff, only
    counted; the start keeps every file (a fork restores it as recorded), and the start with
    the diff applied (what forks and offline scoring rebuild) is the end without the noise,
    a noise file of the start still as it was then."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "app.py").write_text("print(1)\n")
    (workspace / "__pycache__").mkdir()
    (workspace / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\x00start")
    if vcs == "git":
        _git(workspace, "init", "-q")
        _git(workspace, "add", "-A")
        _git(workspace, "commit", "-q", "-m", "start")
    snapshot, baseline = await capture(workspace, max_bytes=BUDGET)
    assert baseline is not None
    if vcs == "none":
        assert {f.path for f in snapshot.files} == {"app.py", "__pycache__/app.cpython-311.pyc"}
    (workspace / "app.py").write_text("print(2)\n")
    (workspace / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\x00end")
    (workspace / "pkg" / "__pycache__").mkdir(parents=True)
    (workspace / "pkg" / "mod.py").write_text("x = 1\n")
    (workspace / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\x00\x01")
    (workspace / "legacy.pyc").write_bytes(b"\x00\x02")
    try:
        diff = await final_diff(baseline, reason="finished")
        kept_all = await final_diff(baseline, reason="finished", leave_out=())
    finally:
        baseline.close()
    assert diff.changed == ["app.py", "pkg/mod.py"]
    assert "pyc" not in diff.diff
    assert [(o.pattern, o.files) for o in diff.left_out] == [("__pycache__", 2), ("*.pyc", 1)]
    assert len(kept_all.changed) == 5 and kept_all.left_out == []

    end = tmp_path / "end"
    await restore(snapshot, end, repository=workspace if vcs == "git" else None)
    await apply_change(end, diff.diff)
    assert _tree(end) == {
        "app.py": b"print(2)\n",
        "pkg/mod.py": b"x = 1\n",
        "__pycache__/app.cpython-311.pyc": b"\x00start",
    }


async def test_an_empty_directory_is_recorded_as_capture_records_it_without_git(
    tmp_path: Path,
) -> None:
    """The API records a fresh workspace with ``empty_snapshot`` (no git process per created
    session): the same snapshot ``capture`` makes of an empty directory, so a worker's
    baseline from it is the same; a directory with anything in it is not empty."""
    empty = tmp_path / "fresh"
    empty.mkdir()
    assert is_empty_directory(empty)
    captured, baseline = await capture(empty, max_bytes=12345)
    assert baseline is not None
    baseline.close()
    fields = {"event_id", "created_at"}
    assert empty_snapshot(12345).model_dump(exclude=fields) == captured.model_dump(exclude=fields)
    (empty / ".hidden").write_text("x")
    assert not is_empty_directory(empty)
    assert not is_empty_directory(tmp_path / "missing")
