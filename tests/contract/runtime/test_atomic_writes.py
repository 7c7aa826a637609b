"""File writes are atomic: a full disk never leaves a half-written file, and undo still works.

The workspace is a real, small tmpfs (mounted as root) that the test fills up. Before: the
file was truncated and rewritten in place, so a ``str_replace`` that grew a file on a full
disk left it cut mid-line, and the undo history, recorded only after a successful write, had
nothing to go back to. Now every write goes to a temporary file in the same directory, is
flushed, and is renamed over the target; the history entry is made first and dropped again
only when the write failed (the file is then unchanged).
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.events import ErrorObservation, FileEdit, FileEditOutput, FileWrite, FileWriteOutput
from app.runtime import Runtime
from tests.support.ci import IN_CI

ORIGINAL = "".join(
    f"line {n:04} of the original file, long enough to fill pages\n" for n in range(110)
)
GROWTH = "x" * 5000  # the edit needs pages the full disk does not have


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs as the workspace (overrides the plain directory of conftest)."""
    if os.geteuid() != 0:
        assert not IN_CI, "CI runs as root, which can mount a small file system"
        pytest.skip("mounting a tmpfs needs root")
    path = tmp_path / "workspace"
    path.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", str(path)], check=True
    )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(directory: Path) -> Path:
    """Fill the file system of ``directory`` to the last byte; the file that did it."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as handle:
        for size in (65536, 4096, 512, 1):
            chunk = b"\0" * size
            while True:
                try:
                    handle.write(chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    return filler


async def edit(runtime: Runtime, **fields: object) -> FileEditOutput | ErrorObservation:
    observation = await runtime.execute(FileEdit(**fields))
    assert isinstance(observation, FileEditOutput | ErrorObservation), observation
    return observation


async def test_full_disk_leaves_the_file_whole_and_undo_works(
    runtime: Runtime, workspace: Path
) -> None:
    await runtime.upload("code.py", ORIGINAL.encode())  # the sandbox user's file
    first = await edit(
        runtime, command="str_replace", path="code.py", old_str="line 0000", new_str="LINE 0"
    )
    assert isinstance(first, FileEditOutput)
    after_first = ORIGINAL.replace("line 0000", "LINE 0")
    filler = fill(workspace)

    grown = await edit(
        runtime, command="str_replace", path="code.py", old_str="line 0050", new_str=GROWTH
    )
    assert isinstance(grown, ErrorObservation), grown
    assert "No space left" in grown.message and "not changed" in grown.message
    assert (workspace / "code.py").read_text() == after_first  # whole, not cut mid-line
    rewritten = await runtime.execute(FileWrite(path="code.py", content=ORIGINAL + GROWTH))
    assert isinstance(rewritten, ErrorObservation), rewritten
    created = await edit(runtime, command="create", path="new.py", file_text=GROWTH)
    assert isinstance(created, ErrorObservation), created
    assert sorted(os.listdir(workspace)) == ["code.py", "filler"]  # no temporary file left

    undone_on_full_disk = await edit(runtime, command="undo_edit", path="code.py")
    assert isinstance(undone_on_full_disk, ErrorObservation)
    assert (workspace / "code.py").read_text() == after_first

    filler.unlink()
    undone = await edit(runtime, command="undo_edit", path="code.py")
    assert isinstance(undone, FileEditOutput), undone
    assert (workspace / "code.py").read_text() == ORIGINAL
    nothing_left = await edit(runtime, command="undo_edit", path="code.py")
    assert isinstance(nothing_left, ErrorObservation) and "no edit" in nothing_left.message


async def test_writes_keep_the_mode_and_follow_links_inside(
    runtime: Runtime, workspace: Path
) -> None:
    await runtime.upload("run.sh", b"#!/bin/sh\necho one\n")
    os.chmod(workspace / "run.sh", 0o750)
    done = await edit(runtime, command="str_replace", path="run.sh", old_str="one", new_str="two")
    assert isinstance(done, FileEditOutput), done
    assert stat.S_IMODE(os.stat(workspace / "run.sh").st_mode) == 0o750
    assert (workspace / "run.sh").read_text() == "#!/bin/sh\necho two\n"

    (workspace / "alias.sh").symlink_to("run.sh")
    written = await runtime.execute(FileWrite(path="alias.sh", content="#!/bin/sh\necho three\n"))
    assert isinstance(written, FileWriteOutput), written
    assert (workspace / "alias.sh").is_symlink()  # the link is kept, its target written
    assert (workspace / "run.sh").read_text() == "#!/bin/sh\necho three\n"
    assert stat.S_IMODE(os.stat(workspace / "run.sh").st_mode) == 0o750
