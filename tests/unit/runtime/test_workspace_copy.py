"""A workspace carried to a remote engine and back (app/runtime/docker/workspace_copy.py): the
round trip keeps what a bind mount would, and a hostile tar from the sandbox writes nothing
outside the workspace, keeps no setuid bit, and leaves the workspace whole when it fails."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from app.runtime.docker.workspace_copy import WorkspaceCopyError, pack, spool_bounded, unpack
from app.runtime.sandbox_user import SandboxUser

ME = SandboxUser(os.geteuid(), os.getegid())


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> io.BytesIO:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    out.seek(0)
    return out


def _entry(name: str, kind: bytes = tarfile.REGTYPE, **fields: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    for key, value in fields.items():
        setattr(info, key, value)
    return info


def _as_get_archive(source: Path) -> io.BytesIO:
    """What an engine's ``get_archive("/workspace")`` sends: members under ``workspace/``."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.add(source, arcname="workspace")
    out.seek(0)
    return out


def test_a_round_trip_keeps_files_links_modes_and_removes_what_went(tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "pkg" / "deep").mkdir(parents=True)
    (source / "pkg" / "deep" / "mod.py").write_text("x = 1\n")
    (source / "run.sh").write_text("#!/bin/sh\n")
    (source / "run.sh").chmod(0o755)
    (source / "link").symlink_to("pkg/deep/mod.py")
    (source / "outside").symlink_to("/etc/hostname")  # a link out is only a name
    (source / ".git").mkdir()
    (source / ".git" / "HEAD").write_text("ref: refs/heads/main\n")

    with pack(source, SandboxUser(4242, 4343)) as packed:
        with tarfile.open(fileobj=packed) as tar:
            members = {m.name: m for m in tar.getmembers()}
    assert set(members) >= {"pkg", "pkg/deep/mod.py", "run.sh", "link", "outside", ".git/HEAD"}
    assert {(m.uid, m.gid) for m in members.values()} == {(4242, 4343)}

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "stale.txt").write_text("the sandbox deleted this\n")
    (workspace / "stale-dir").mkdir()
    assert unpack(_as_get_archive(source), workspace, top="workspace", owner=ME) == []

    assert sorted(os.listdir(workspace)) == [".git", "link", "outside", "pkg", "run.sh"]
    assert (workspace / "pkg" / "deep" / "mod.py").read_text() == "x = 1\n"
    assert os.readlink(workspace / "link") == "pkg/deep/mod.py"
    assert os.readlink(workspace / "outside") == "/etc/hostname"
    assert (workspace / "run.sh").stat().st_mode & 0o111
    assert (workspace / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"


def test_pack_leaves_out_pipes_and_clears_setuid(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    os.mkfifo(source / "pipe")
    (source / "tool").write_text("#!/bin/sh\n")
    (source / "tool").chmod(0o4755)
    with pack(source, ME) as packed, tarfile.open(fileobj=packed) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert "pipe" not in members
    assert not members["tool"].mode & (stat.S_ISUID | stat.S_ISGID)


def test_a_hostile_tar_writes_nothing_outside_and_keeps_no_setuid(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    hostile = _tar(
        [
            (_entry("workspace", tarfile.DIRTYPE), None),
            (_entry("workspace/fine.txt"), b"fine\n"),
            (_entry("/etc/evil"), b"absolute\n"),
            (_entry("workspace/../../outside/dotdot"), b"dotdot\n"),
            (_entry("elsewhere/file"), b"not under the workspace\n"),
            (_entry("workspace/escape", tarfile.SYMTYPE, linkname=str(outside)), None),
            (_entry("workspace/escape/through-link"), b"through a link\n"),
            (_entry("workspace/hard", tarfile.LNKTYPE, linkname="/etc/passwd"), None),
            (_entry("workspace/fifo", tarfile.FIFOTYPE), None),
            (_entry("workspace/suid", mode=0o6755), b"#!/bin/sh\n"),
        ]
    )
    left_out = unpack(hostile, workspace, top="workspace", owner=ME)

    assert os.listdir(outside) == []
    assert not Path("/etc/evil").exists()
    assert (workspace / "fine.txt").read_text() == "fine\n"
    assert os.readlink(workspace / "escape") == str(outside)  # the link, not its target
    assert not (workspace / "hard").exists() and not (workspace / "fifo").exists()
    assert not (workspace / "suid").stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    named = " ".join(left_out)
    for name in ("/etc/evil", "dotdot", "elsewhere/file", "through-link", "hard", "fifo"):
        assert name in named


def test_a_tar_that_breaks_half_way_leaves_the_workspace_as_it_was(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "kept.txt").write_text("still here\n")
    whole = _tar([(_entry("workspace/big"), b"x" * 100_000)]).getvalue()
    with pytest.raises(WorkspaceCopyError, match="keeps what it had"):
        unpack(io.BytesIO(whole[:20_000]), workspace, top="workspace", owner=ME)
    assert os.listdir(workspace) == ["kept.txt"]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".chronicle-copy-")]


def test_what_comes_back_is_bounded() -> None:
    with spool_bounded([b"a" * 600, b"b" * 400], limit=1000) as spooled:
        assert spooled.read() == b"a" * 600 + b"b" * 400
    with pytest.raises(WorkspaceCopyError, match="not copied back"):
        spool_bounded(iter([b"a" * 600, b"b" * 401]), limit=1000)
