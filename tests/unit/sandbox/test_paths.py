"""Opening paths beneath the workspace (the action server's ``paths``), both ways it can.

The server opens with ``openat2(RESOLVE_BENEATH)`` where the kernel has it and walks one
component at a time with ``O_NOFOLLOW`` where it does not (old kernels, seccomp profiles that
refuse the call). Each case runs both ways: symlinks that stay inside work, those leading out
are refused, and nothing outside is ever created. The race itself (a directory swapped for a
symlink while actions run) is in test_local_jail.py.
"""

from __future__ import annotations

import errno
import importlib
import os
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from app.runtime.image import RUNTIME_IMAGE_DIR


@pytest.fixture(params=["openat2", "walk"])
def paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(RUNTIME_IMAGE_DIR))
    module = importlib.import_module("chronicle_sandbox.paths")
    if request.param == "walk":
        monkeypatch.setattr(module, "_openat2", lambda *args: None)  # as without the syscall
    else:
        probe = os.open("/", os.O_PATH)
        try:
            fd = module._openat2(probe, ".", os.O_PATH, 0)
        finally:
            os.close(probe)
        if fd is None:
            assert os.environ.get("CI") != "true", "CI's kernel should have openat2 (>= 5.6)"
            pytest.skip("this kernel has no openat2")
        os.close(fd)
    return module


@pytest.fixture
def files(paths: ModuleType) -> ModuleType:
    return importlib.import_module("chronicle_sandbox.files")


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with links of every kind, and a directory outside it with a secret."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "real").mkdir(parents=True)
    (workspace / "real" / "inside.txt").write_text("inside\n")
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    links = {
        "relative": "real/inside.txt",
        "absolute": str(workspace / "real" / "inside.txt"),
        "dir-relative": "real",
        "dir-absolute": str(workspace / "real"),
        "self": ".",
        "out-absolute": str(outside / "secret.txt"),
        "out-relative": "../outside/secret.txt",
        "out-dir": str(outside),
        "out-up": "..",
        "dangling-inside": "real/made-through-link.txt",
        "dangling-out": str(outside / "made-outside.txt"),
        "loop-a": "loop-b",
        "loop-b": "loop-a",
    }
    for name, target in links.items():
        (workspace / name).symlink_to(target)
    return workspace, outside


def read(paths: ModuleType, workspace: Path, path: str) -> str:
    fd = paths.Workspace(str(workspace)).open(path, os.O_RDONLY)
    try:
        return os.read(fd, 100).decode()
    finally:
        os.close(fd)


def write(paths: ModuleType, workspace: Path, path: str, text: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = paths.Workspace(str(workspace)).open(path, flags, make_parents=True)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "path",
    ["real/inside.txt", "relative", "absolute", "dir-relative/inside.txt",
     "dir-absolute/inside.txt", "self/self/real/inside.txt", "real/../relative"],
)  # fmt: skip
def test_links_that_stay_inside_work(paths: ModuleType, tree: tuple[Path, Path], path: str) -> None:
    workspace, _ = tree
    assert read(paths, workspace, path) == "inside\n"
    assert read(paths, workspace, str(workspace / path)) == "inside\n"


@pytest.mark.parametrize(
    "path",
    ["out-absolute", "out-relative", "out-dir/secret.txt", "out-up/outside/secret.txt",
     "dir-relative/../out-dir/secret.txt", "self/out-dir/secret.txt"],
)  # fmt: skip
def test_links_leading_out_are_refused(
    paths: ModuleType, tree: tuple[Path, Path], path: str
) -> None:
    workspace, _ = tree
    with pytest.raises(paths.PathError, match="outside the workspace"):
        read(paths, workspace, path)


@pytest.mark.parametrize("path", ["../outside/secret.txt", "/etc/passwd", "real/../../outside"])
def test_names_leading_out_are_refused_before_opening(
    paths: ModuleType, tree: tuple[Path, Path], path: str
) -> None:
    workspace, _ = tree
    with pytest.raises(paths.PathError, match="outside the workspace"):
        read(paths, workspace, path)


def test_writes_create_parents_and_follow_only_inside(
    paths: ModuleType, tree: tuple[Path, Path]
) -> None:
    workspace, outside = tree
    write(paths, workspace, "new/deeper/file.txt", "a")
    assert (workspace / "new/deeper/file.txt").read_text() == "a"
    write(paths, workspace, "dir-absolute/made/here.txt", "b")
    assert (workspace / "real/made/here.txt").read_text() == "b"
    write(paths, workspace, "dangling-inside", "c")
    assert (workspace / "real/made-through-link.txt").read_text() == "c"
    for path in ("dangling-out", "out-dir/new.txt", "out-dir/sub/new.txt", "out-absolute"):
        with pytest.raises(paths.PathError, match="outside the workspace"):
            write(paths, workspace, path, "pwned")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "secret\n"


def test_loops_and_unlink(paths: ModuleType, tree: tuple[Path, Path]) -> None:
    workspace, outside = tree
    with pytest.raises(OSError) as loop:
        read(paths, workspace, "loop-a")
    assert loop.value.errno == errno.ELOOP
    paths.Workspace(str(workspace)).unlink("out-absolute")  # the link, never its target
    assert not (workspace / "out-absolute").is_symlink()
    assert (outside / "secret.txt").exists()
    paths.Workspace(str(workspace)).unlink("dir-relative/inside.txt")
    assert not (workspace / "real" / "inside.txt").exists()


def test_a_fifo_is_refused_without_waiting(files: ModuleType, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    operations: Any = files.Files(str(tmp_path))
    started = time.monotonic()
    for attempt in (
        lambda: operations.read("pipe"),
        lambda: operations.write("pipe", "x"),
        lambda: operations.read_bytes("pipe", 100),
    ):
        with pytest.raises(files.FileActionError, match="pipe is not a regular file"):
            attempt()
    assert time.monotonic() - started < 5
