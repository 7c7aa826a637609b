"""A crafted ``workspace.snapshot``, made as an attacker would, never writes outside the fork's
workspace: not through a link an earlier entry made, not through ``..`` or an absolute path,
not as root.

The attacker records a session of their own through the event store as the application's
login (what `chronicle append` does: an app login may append any event), exports it with the
`chronicle` command and hands the file over: `chronicle import` refuses it, naming
the session and seq. The same session appended straight into the victim's database (any
login of the application can) is refused by `chronicle fork` before anything is written.
Below the rule, the writer itself never follows a link, and as root it writes as the
sandbox's unprivileged uid.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import Settings
from app.events import WorkspaceFile, WorkspaceSnapshot
from app.runtime import restore_files
from app.runtime.workspace_restore import apply_change, restore
from app.runtime.workspace_state import WorkspaceStateError
from app.store import EventStore
from tests.support.cli import chronicle, cli_environment
from tests.support.nonroot_user import as_user, ensure_user, interpreter_for
from tests.support.postgres import ServerAddress, database_from_template

SANDBOX_UID = 10001
NONROOT_USER = "chronicle-jail-test"


def _entry(path: str, content: str, kind: str = "file") -> dict[str, object]:
    encoding = "link" if kind == "symlink" else "text"
    return {"path": path, "type": kind, "size": len(content), "sha256": "",
            "encoding": encoding, "content": content}  # fmt: skip


def hostile_manifests(victim: Path) -> dict[str, list[dict[str, object]]]:
    """Each way a manifest could reach ``victim`` (a host file outside any workspace)."""
    return {
        "write through a link made first": [
            _entry("x", str(victim), "symlink"),
            _entry("x", "pwned\n"),
        ],
        "an executable named like the link (chmod follows it)": [
            _entry("run", str(victim), "symlink"),
            _entry("run", "#!/bin/sh\n", "executable"),
        ],
        "a file beneath a link to its directory": [
            _entry("d", str(victim.parent), "symlink"),
            _entry(f"d/{victim.name}", "pwned\n"),
        ],
        "climbing out with ..": [_entry(f"a/../../../{victim.name}", "pwned\n")],
        "an absolute path": [_entry(str(victim), "pwned\n")],
        "inside .git": [_entry(".git/hooks/post-checkout", "#!/bin/sh\n", "executable")],
    }


@pytest.fixture
def victim_dir(tmp_path: Path) -> Path:
    """Host files the attack aims at: a file, beside the workspaces."""
    victim = tmp_path / "host"
    victim.mkdir()
    (victim / "passwd").write_text("original\n")
    os.chmod(victim / "passwd", 0o600)
    return victim


@pytest.fixture
def other_database_url(pg_address: ServerAddress, pg_template: str) -> Iterator[str]:
    """The victim's database, as its owner: where `chronicle import` loads."""
    yield from database_from_template(pg_address, pg_template, f"t_{uuid.uuid4().hex[:16]}")


def _record(database_url: str, files: list[dict[str, object]], workspace: Path) -> str:
    """The attacker's session: created, its crafted start, a message (a place to fork),
    appended one by one as `chronicle append` appends them, in this process: three commands
    a case cost seconds of starting processes and proved nothing the import and fork below
    do not."""
    session = uuid.uuid4()
    config = {"workspace": str(workspace), "runtime": "local", "agent": "codeact"}
    snapshot = {"vcs": "none", "files": files, "max_bytes": 1 << 20}
    settings = Settings(data_dir=workspace.parent / "attacker" / "data")

    async def append() -> None:
        async with await EventStore.open(
            database_url, config=settings.store, masker=settings.masker()
        ) as store:
            for event in [
                {"kind": "session.created", "title": "innocent", "config": config},
                {"kind": "workspace.snapshot", **snapshot},
                {"kind": "message", "content": "carry on"},
            ]:
                await store.append(session, [event])

    asyncio.run(append())
    return str(session)


def _untouched(victim: Path) -> None:
    assert (victim / "passwd").read_text() == "original\n"
    assert oct((victim / "passwd").stat().st_mode & 0o7777) == oct(0o600)
    assert sorted(p.name for p in victim.iterdir()) == ["passwd"]


@pytest.mark.parametrize("attack", list(hostile_manifests(Path("/h/passwd"))))
def test_a_crafted_export_is_refused_on_import_and_a_crafted_session_on_fork(
    attack: str,
    app_database_url: str,
    other_database_url: str,
    victim_dir: Path,
    tmp_path: Path,
) -> None:
    files = hostile_manifests(victim_dir / "passwd")[attack]
    for side in ("attacker", "victim"):
        (tmp_path / side).mkdir()
    # The attacker's own Chronicle (an application login: it may append any event).
    app_login = cli_environment(app_database_url, tmp_path / "attacker")
    session = _record(app_database_url, files, tmp_path / "their-project")
    archive = tmp_path / "innocent.jsonl"
    exported = chronicle("export", session, "-o", str(archive), env=app_login)
    assert exported.returncode == 0, exported.stderr

    victim_env = cli_environment(other_database_url, tmp_path / "victim")
    imported = chronicle("import", str(archive), env=victim_env)
    assert imported.returncode == 1, imported.stdout
    assert f"session {session}, event 2: the workspace.snapshot cannot be restored safely" in (
        imported.stderr
    )
    assert "nothing was imported" in imported.stderr and "Traceback" not in imported.stderr
    listed = chronicle("events", session, env=victim_env)
    assert listed.returncode != 0  # not one event of it was loaded

    # The same session in a database an application login appended it to, then forked.
    fork_workspace = tmp_path / "fork"
    forked = chronicle(
        "fork", session, "--at", "3", "--workspace", str(fork_workspace), env=app_login
    )
    assert forked.returncode != 0
    assert "cannot restore the recorded workspace" in forked.stderr
    assert "Traceback" not in forked.stderr
    _untouched(victim_dir)
    assert not fork_workspace.exists() or not any(fork_workspace.iterdir())


@pytest.mark.parametrize("attack", list(hostile_manifests(Path("/h/passwd")))[:3])
def test_the_writer_itself_never_follows_a_link(
    attack: str, victim_dir: Path, tmp_path: Path
) -> None:
    """Below the manifest rule: entries handed straight to the writer, link first."""
    target = tmp_path / "target"
    target.mkdir()
    fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(restore_files.RestoreRefused):
            restore_files.write_entries(fd, hostile_manifests(victim_dir / "passwd")[attack])
    finally:
        os.close(fd)
    _untouched(victim_dir)


def _snapshot(*files: WorkspaceFile) -> WorkspaceSnapshot:
    return WorkspaceSnapshot(vcs="none", files=list(files), max_bytes=1 << 20)


def _file(path: str, content: str, kind: str = "file") -> WorkspaceFile:
    return WorkspaceFile.model_validate(_entry(path, content, kind))


@pytest.mark.skipif(os.geteuid() != 0, reason="the privilege drop is what root does")
async def test_as_root_the_files_are_written_by_the_sandbox_uid(tmp_path: Path) -> None:
    """Run by root, a restore writes as the sandbox's uid: files, directories and links are
    its own (a mistake in the writer could do no more than that uid may)."""
    target = tmp_path / "fork"
    snapshot = _snapshot(
        _file("src/app.py", "print('hi')\n"),
        _file("run.sh", "#!/bin/sh\necho run\n", "executable"),
        _file("link", "src/app.py", "symlink"),
        WorkspaceFile(
            path="blob.bin",
            type="file",
            size=3,
            sha256="",
            encoding="base64",
            content=base64.b64encode(b"\x00\xff\x01").decode(),
        ),
    )
    await restore(snapshot, target, repository=None, sandbox_uid=SANDBOX_UID)
    owners = {
        str(p.relative_to(target)): (os.lstat(p).st_uid, oct(os.lstat(p).st_mode & 0o7777))
        for p in [target, *target.rglob("*")]
    }
    assert owners == {
        ".": (SANDBOX_UID, "0o755"),
        "src": (SANDBOX_UID, "0o755"),
        "src/app.py": (SANDBOX_UID, "0o644"),
        "run.sh": (SANDBOX_UID, "0o755"),
        "link": (SANDBOX_UID, "0o777"),
        "blob.bin": (SANDBOX_UID, "0o644"),
    }
    assert (target / "blob.bin").read_bytes() == b"\x00\xff\x01"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True, capture_output=True,
    )  # fmt: skip


async def test_a_git_start_never_writes_through_a_link(victim_dir: Path, tmp_path: Path) -> None:
    """A git start's patch that makes a link and then writes through it: git apply refuses
    the path beyond the link, and the host file keeps its contents."""
    victim = victim_dir / "passwd"
    patch = (
        "diff --git a/x b/x\nnew file mode 120000\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n"
        f"+{victim_dir}\n\\ No newline at end of file\n"
        f"diff --git a/x/{victim.name} b/x/{victim.name}\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/x/{victim.name}\n@@ -0,0 +1 @@\n+pwned\n"
    )
    snapshot = WorkspaceSnapshot(vcs="git", commit=None, diff=patch, max_bytes=1 << 20)
    with pytest.raises(WorkspaceStateError, match="beyond a symbolic link"):
        await restore(snapshot, tmp_path / "fork", repository=None)
    _untouched(victim_dir)

    named_as_link = patch.replace(f"x/{victim.name}", "x").replace(
        "new file mode 100644", "index 0000000..1111111"
    )
    with pytest.raises(WorkspaceStateError):
        await restore(
            WorkspaceSnapshot(vcs="git", diff=named_as_link), tmp_path / "fork2", repository=None
        )
    _untouched(victim_dir)


async def test_a_recorded_change_never_writes_through_a_restored_link(
    victim_dir: Path, tmp_path: Path
) -> None:
    """Offline scoring applies the session's last workspace.diff on its restored start: a link
    the start holds (allowed: it is never followed) is not a way out for the change either, and
    what the change writes is the sandbox user's."""
    target = tmp_path / "final"
    start = _snapshot(_file("out", str(victim_dir), "symlink"), _file("keep.txt", "k\n"))
    await restore(start, target, repository=None)
    through = (
        "diff --git a/out/passwd b/out/passwd\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/out/passwd\n@@ -0,0 +1 @@\n+pwned\n"
    )
    # As root, git runs as the sandbox's uid, which may not even reach the link's target.
    with pytest.raises(WorkspaceStateError, match=r"beyond a symbolic link|Permission denied"):
        await apply_change(target, through)
    _untouched(victim_dir)
    fine = (
        "diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n"
    )
    await apply_change(target, fine)
    assert (target / "new.txt").read_text() == "new\n"
    assert os.stat(target / "new.txt").st_uid == os.stat(target).st_uid


def test_as_a_non_root_user_nothing_is_written_outside() -> None:
    """Run by a normal user, restore writes in its own process: the same refusals, the same
    writer (its link-first entries refused even without the rule), files the user's own."""
    base = Path(tempfile.mkdtemp(prefix="chronicle-nonroot-"))
    try:
        base.chmod(0o755)
        user = ensure_user(NONROOT_USER) if os.geteuid() == 0 else None
        prefix = as_user(user)
        victim_dir = base / "host"
        victim_dir.mkdir()
        (victim_dir / "passwd").write_text("original\n")
        os.chmod(victim_dir / "passwd", 0o600)
        work = base / "work"
        work.mkdir()
        if user is not None:
            os.chown(victim_dir / "passwd", user.pw_uid, user.pw_gid)  # theirs: writable
            os.chown(victim_dir, user.pw_uid, user.pw_gid)
            os.chown(work, user.pw_uid, user.pw_gid)
        manifests = hostile_manifests(victim_dir / "passwd")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base),
               "LANG": "C.UTF-8"}  # fmt: skip
        python, pythonpath = interpreter_for(prefix, env)
        script = str(Path(__file__).parents[2] / "support" / "nonroot_restore.py")
        args = {"base": str(work), "manifests": manifests}
        finished = subprocess.run(
            [*prefix, python, script, json.dumps(args)],
            env={**env, "PYTHONPATH": pythonpath}, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert finished.returncode == 0, finished.stderr[-3000:]
        result = json.loads(finished.stdout.strip().splitlines()[-1])
        assert result["uid"] != 0
        assert all("cannot be restored safely" in said for said in result["restore"].values())
        for name in list(manifests)[:5]:  # the links, `..` and the absolute path
            assert result["writer"][name].startswith("RestoreRefused"), result["writer"]
        assert result["good_owner"] == result["uid"]
        assert (victim_dir / "passwd").read_text() == "original\n"
        assert sorted(p.name for p in victim_dir.iterdir()) == ["passwd"]
    finally:
        shutil.rmtree(base, ignore_errors=True)
