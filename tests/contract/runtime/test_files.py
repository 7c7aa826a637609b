"""File actions and the str_replace_editor commands through a real runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.events import (
    ErrorObservation,
    FileEdit,
    FileEditOutput,
    FileRead,
    FileReadOutput,
    FileWrite,
    FileWriteOutput,
)
from app.runtime import Runtime


async def edit(runtime: Runtime, **fields: object) -> FileEditOutput:
    observation = await runtime.execute(FileEdit(**fields))
    assert isinstance(observation, FileEditOutput), observation
    return observation


async def refused(runtime: Runtime, action) -> str:
    observation = await runtime.execute(action)
    assert isinstance(observation, ErrorObservation), observation
    return observation.message


async def test_write_creates_parents_and_read_numbers_lines(
    runtime: Runtime, workspace: Path, inside: str
) -> None:
    written = await runtime.execute(FileWrite(path="deep/er/notes.txt", content="a\nb\nc\nd\n"))
    assert isinstance(written, FileWriteOutput) and "+a" in written.diff
    assert (workspace / "deep/er/notes.txt").read_text() == "a\nb\nc\nd\n"
    whole = await runtime.execute(FileRead(path="deep/er/notes.txt"))
    assert isinstance(whole, FileReadOutput)
    assert whole.content == "     1\ta\n     2\tb\n     3\tc\n     4\td"
    part = await runtime.execute(FileRead(path=f"{inside}/deep/er/notes.txt", start=2, end=3))
    assert part.content == "     2\tb\n     3\tc"


async def test_view_file_and_directory(runtime: Runtime, workspace: Path, inside: str) -> None:
    (workspace / "pkg/sub/inner").mkdir(parents=True)
    (workspace / "pkg/mod.py").write_text("x = 1\ny = 2\n")
    (workspace / "pkg/sub/inner/deep.txt").write_text("too deep")
    (workspace / ".hidden").write_text("")
    listing = (await edit(runtime, command="view", path=".")).content
    assert f"{inside}/pkg/" in listing and f"{inside}/pkg/mod.py" in listing
    assert f"{inside}/pkg/sub/" in listing
    assert "deep.txt" not in listing and ".hidden" not in listing
    viewed = await edit(runtime, command="view", path="pkg/mod.py", view_range=[2, -1])
    assert viewed.content == "     2\ty = 2"


async def test_create_refuses_to_overwrite(runtime: Runtime, workspace: Path) -> None:
    created = await edit(runtime, command="create", path="new.py", file_text="print('hi')\n")
    assert "+print('hi')" in created.diff
    message = await refused(runtime, FileEdit(command="create", path="new.py", file_text="x"))
    assert "already exists" in message
    assert (workspace / "new.py").read_text() == "print('hi')\n"


async def test_str_replace_exactly_once(runtime: Runtime, workspace: Path) -> None:
    await runtime.upload("code.py", b"a = 1\nb = 2\na = 1\n")  # the sandbox user edits it
    none = await refused(
        runtime, FileEdit(command="str_replace", path="code.py", old_str="zzz", new_str="y")
    )
    assert "does not occur" in none
    several = await refused(
        runtime, FileEdit(command="str_replace", path="code.py", old_str="a = 1", new_str="a = 3")
    )
    assert "occurs 2 times" in several and "lines 1, 3" in several
    done = await edit(
        runtime, command="str_replace", path="code.py", old_str="b = 2", new_str="b = 20"
    )
    assert "-b = 2\n+b = 20" in done.diff
    assert (workspace / "code.py").read_text() == "a = 1\nb = 20\na = 1\n"


async def test_insert_after_a_line_and_undo(runtime: Runtime, workspace: Path) -> None:
    await runtime.upload("list.txt", b"one\ntwo\n")  # the sandbox user edits it
    await edit(runtime, command="insert", path="list.txt", insert_line=1, new_str="one and a half")
    assert (workspace / "list.txt").read_text() == "one\none and a half\ntwo\n"
    await edit(runtime, command="insert", path="list.txt", insert_line=0, new_str="zero")
    assert (workspace / "list.txt").read_text().startswith("zero\none\n")
    undone = await edit(runtime, command="undo_edit", path="list.txt")
    assert "-zero" in undone.diff
    await edit(runtime, command="undo_edit", path="list.txt")
    assert (workspace / "list.txt").read_text() == "one\ntwo\n"
    assert "no edit" in await refused(runtime, FileEdit(command="undo_edit", path="list.txt"))
    bad = await refused(
        runtime, FileEdit(command="insert", path="list.txt", insert_line=9, new_str="x")
    )
    assert "between 0 and 2" in bad


async def test_binary_and_oversized_files_are_refused(runtime: Runtime, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    assert "binary" in await refused(runtime, FileRead(path="blob.bin"))
    (workspace / "huge.txt").write_text("x" * (6 * 1024 * 1024))
    assert "limit" in await refused(runtime, FileRead(path="huge.txt"))
    assert "limit" in await refused(runtime, FileEdit(command="view", path="huge.txt"))


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "a/../../outside.txt"])
async def test_paths_leading_out_are_refused(runtime: Runtime, path: str) -> None:
    assert "outside the workspace" in await refused(runtime, FileRead(path=path))
    assert "outside the workspace" in await refused(runtime, FileWrite(path=path, content="x"))


async def test_symlink_leading_out_is_refused(
    runtime: Runtime, workspace: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    (workspace / "link").symlink_to(secret)
    assert "outside the workspace" in await refused(runtime, FileRead(path="link"))
    (workspace / "inside.txt").write_text("fine")
    (workspace / "good_link").symlink_to("inside.txt")
    assert (await runtime.execute(FileRead(path="good_link"))).content == "     1\tfine"


async def test_upload_and_download(runtime: Runtime, workspace: Path) -> None:
    await runtime.upload("up/data.bin", b"\x00\xffpayload")
    assert (workspace / "up/data.bin").read_bytes() == b"\x00\xffpayload"
    assert await runtime.download("up/data.bin") == b"\x00\xffpayload"
    with pytest.raises(ValueError, match="outside the workspace"):
        await runtime.download("../../etc/passwd")


async def test_diff_headers_are_relative_to_the_workspace(runtime: Runtime, inside: str) -> None:
    """Before: an absolute path gave ``--- a//workspace/x.py`` (a double slash)."""
    by_absolute = await edit(runtime, command="create", path=f"{inside}/pkg/x.py", file_text="a\n")
    assert by_absolute.diff.startswith("--- a/pkg/x.py\n+++ b/pkg/x.py\n"), by_absolute.diff
    by_relative = await edit(
        runtime, command="str_replace", path="pkg/x.py", old_str="a", new_str="b"
    )
    assert by_relative.diff.startswith("--- a/pkg/x.py\n+++ b/pkg/x.py\n"), by_relative.diff
    written = await runtime.execute(FileWrite(path=f"{inside}/pkg/x.py", content="c\n"))
    assert isinstance(written, FileWriteOutput)
    assert written.diff.startswith("--- a/pkg/x.py\n+++ b/pkg/x.py\n"), written.diff
