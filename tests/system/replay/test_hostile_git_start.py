"""A crafted git start (``workspace.snapshot`` with ``vcs: git``): its commit and branch are
handed to git on the host, so they are refused unless they are what git itself records (an
object id, a branch name), on import and again before a restore or a resume.

The attacks: a commit ``--index-output=FILE`` (resuming the session ran ``git read-tree`` with
it, as root: the file was overwritten with an index), and a commit ``HEAD`` with a recorded
workspace naming another repository on the host (a fork checked out whatever that repository
holds, for the fork's owner to read).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import Settings
from app.events import Message, SessionCreated, WorkspaceSnapshot
from app.events.workspace import unsafe_start
from app.runtime.workspace_restore import baseline_from_snapshot, restore
from app.runtime.workspace_state import WorkspaceStateError
from app.sessions.fork import clonable, continue_fork, fork_workspace, record_fork
from app.sessions.runner import SessionError, SessionOptions
from app.store import EventStore
from tests.support.cli import chronicle, cli_environment
from tests.support.postgres import ServerAddress, database_from_template


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True, capture_output=True,
    )  # fmt: skip


def head_of(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def private_repository(tmp_path: Path) -> Path:
    """Another repository on the host: not the attacker's, its contents not theirs to read."""
    repo = tmp_path / "private"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "secret.txt").write_text("the host's secret\n")
    _git(repo, "add", "secret.txt")
    _git(repo, "commit", "-q", "-m", "private")
    return repo


@pytest.fixture
def other_database_url(pg_address: ServerAddress, pg_template: str) -> Iterator[str]:
    yield from database_from_template(pg_address, pg_template, f"t_{uuid.uuid4().hex[:16]}")


async def test_a_commit_that_is_an_option_writes_no_file_on_resume(tmp_path: Path) -> None:
    """Resuming rebuilds the start's tree with ``git read-tree COMMIT``: a commit that is an
    option is refused, and the file it names keeps its contents."""
    victim = tmp_path / "host-file"
    victim.write_text("original\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    snapshot = WorkspaceSnapshot(vcs="git", commit=f"--index-output={victim}")
    with pytest.raises(WorkspaceStateError, match="is not a git object id"):
        await baseline_from_snapshot(snapshot, workspace)
    assert victim.read_text() == "original\n"


@pytest.mark.parametrize(
    ("commit", "branch"),
    [("HEAD", None), ("main", None), ("HEAD", "--orphan"), ("0" * 40, "-B")],
)
async def test_a_fork_checks_out_no_ref_of_another_repository(
    commit: str, branch: str | None, private_repository: Path, tmp_path: Path
) -> None:
    """A fork clones the repository the session recorded as its workspace: a commit that is a
    ref (``HEAD``, ``main``) rather than the id git recorded, or a branch that is an option,
    is refused before anything is cloned."""
    target = tmp_path / "fork"
    snapshot = WorkspaceSnapshot(vcs="git", commit=commit, branch=branch)
    with pytest.raises(WorkspaceStateError, match="cannot be restored safely"):
        await restore(snapshot, target, repository=private_repository)
    assert not (target / "secret.txt").exists()
    assert not target.exists() or not any(target.iterdir())


def test_a_recorded_start_is_still_restorable(private_repository: Path, tmp_path: Path) -> None:
    """What git records (the full id, the branch checked out) passes."""
    commit = head_of(private_repository)
    for branch in ("main", "feature/x-1.2", "ünïcode", None):
        assert unsafe_start(WorkspaceSnapshot(vcs="git", commit=commit, branch=branch)) is None
    assert unsafe_start(WorkspaceSnapshot(vcs="git", commit=None, diff="")) is None


@pytest.mark.parametrize("commit", ["--index-output=/etc/passwd", "HEAD"])
def test_a_crafted_git_start_is_refused_on_import(
    commit: str, app_database_url: str, other_database_url: str, tmp_path: Path
) -> None:
    for side in ("attacker", "victim"):
        (tmp_path / side).mkdir()
    app_login = cli_environment(app_database_url, tmp_path / "attacker")
    session = str(uuid.uuid4())
    config = {"workspace": "/root/private", "runtime": "local", "agent": "codeact"}
    for kind, payload in [
        ("session.created", {"title": "innocent", "config": config}),
        ("workspace.snapshot", {"vcs": "git", "commit": commit, "max_bytes": 1 << 20}),
        ("message", {"content": "carry on"}),
    ]:
        appended = chronicle("append", session, kind, json.dumps(payload), env=app_login)
        assert appended.returncode == 0, appended.stderr
    archive = tmp_path / "innocent.jsonl"
    exported = chronicle("export", session, "-o", str(archive), env=app_login)
    assert exported.returncode == 0, exported.stderr

    imported = chronicle(
        "import", str(archive), env=cli_environment(other_database_url, tmp_path / "victim")
    )
    assert imported.returncode == 1, imported.stdout
    assert f"session {session}, event 2: the workspace.snapshot cannot be restored safely" in (
        imported.stderr
    )
    assert "is not a git object id" in imported.stderr
    assert "Traceback" not in imported.stderr


async def test_a_fork_through_the_api_clones_no_repository_outside_chronicles_places(
    store: EventStore, settings: Settings, private_repository: Path
) -> None:
    """An application login records a session whose workspace was another repository on the
    host (its commit id is no secret: a public project's, or one seen elsewhere), and forks
    it as the API does (a worker runs the fork): before, the fork checked that repository
    out into a workspace of the API user's. Now the worker clones only from the data
    directory or ``workspace_roots``; ``chronicle fork`` on the host still may."""
    commit = await asyncio.to_thread(head_of, private_repository)
    source = uuid.uuid4()
    config = {"workspace": str(private_repository), "runtime": "local", "agent": "codeact"}
    await store.append(
        source,
        [
            SessionCreated(title="innocent", config=config),
            WorkspaceSnapshot(vcs="git", commit=commit, branch="main"),
            Message(content="carry on", source="user"),
        ],
    )
    fork_id = uuid.uuid4()
    workspace = fork_workspace(settings, fork_id)
    await record_fork(store, settings, source, 3, fork_id=fork_id, workspace=workspace)
    options = SessionOptions(base_url="http://127.0.0.1:9", max_iterations=1)
    said = ""
    try:
        await asyncio.wait_for(continue_fork(store, settings, fork_id, options), 60)
    except SessionError as exc:
        said = str(exc)
    except Exception as exc:  # the old code went on to run the fork
        said = repr(exc)
    assert not (workspace / "secret.txt").exists()
    assert "outside Chronicle's data directory and the configured workspace_roots" in said

    # Named in workspace_roots, the same repository may be cloned (an operator's choice).
    allowed = settings.model_copy(update={"workspace_roots": [private_repository.parent]})
    clonable(allowed, private_repository)
    with pytest.raises(SessionError, match="outside"):
        clonable(settings, private_repository)


@pytest.mark.parametrize("how", ["gitdir file", ".git link", "objects link", "alternates"])
def test_an_api_fork_clones_no_repository_a_sandbox_pointed_elsewhere(
    how: str, settings: Settings, private_repository: Path
) -> None:
    """The recorded workspace lies in the data directory, but its session's sandbox could
    write its ``.git``: pointed at another repository of the host (a ``gitdir:`` file, a
    link, its objects borrowed), the clone would read that one; refused."""
    workspace = settings.data_dir / "workspaces" / "theirs"
    workspace.mkdir(parents=True)
    private_git = private_repository / ".git"
    if how == "gitdir file":
        (workspace / ".git").write_text(f"gitdir: {private_git}\n")
    elif how == ".git link":
        (workspace / ".git").symlink_to(private_git)
    else:
        subprocess.run(["git", "init", "-q", str(workspace)], check=True)
        objects = workspace / ".git" / "objects"
        if how == "objects link":
            shutil.rmtree(objects)
            objects.symlink_to(private_git / "objects")
        else:
            (objects / "info" / "alternates").write_text(f"{private_git / 'objects'}\n")
    with pytest.raises(SessionError, match="does not clone"):
        clonable(settings, workspace)
    plain = settings.data_dir / "workspaces" / "plain"
    subprocess.run(["git", "init", "-q", str(plain)], check=True)
    clonable(settings, plain)
