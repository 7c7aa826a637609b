"""The one rule on which manifests may be restored (``unsafe_entry``), as import and fork use it."""

from __future__ import annotations

import pytest

from app.events.workspace import WorkspaceFile, unsafe_entry


def entry(path: str, kind: str = "file", content: str = "x") -> WorkspaceFile:
    encoding = "link" if kind == "symlink" else "text"
    return WorkspaceFile.model_validate(
        {"path": path, "type": kind, "size": 1, "sha256": "", "encoding": encoding,
         "content": content}
    )  # fmt: skip


def test_a_recorded_workspace_is_restorable() -> None:
    files = [
        entry("README.md"),
        entry("src/app.py"),
        entry("src/deep/er/mod.py"),
        entry("bin/run", "executable"),
        entry("latest", "symlink", "src/app.py"),
        entry("etc-link", "symlink", "/etc"),  # a link may point anywhere; it is never followed
        entry(".gitignore"),
        entry("sub/.github/workflow.yml"),
        entry("src/app.py.orig"),
    ]
    assert unsafe_entry(files) is None
    assert unsafe_entry([]) is None


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ([entry("/etc/passwd")], "not a relative path"),
        ([entry("")], "not a relative path"),
        ([entry("a/../../x")], "'..' part"),
        ([entry("..")], "'..' part"),
        ([entry("./a")], "'..' part"),
        ([entry("a//b")], "'..' part"),
        ([entry("a/")], "'..' part"),
        ([entry("a\x00b")], "not a relative path"),
        ([entry(".git/hooks/pre-commit", "executable")], "inside a .git"),
        ([entry("sub/.GIT/config")], "inside a .git"),
        ([entry("x", "symlink", "/etc/passwd"), entry("x")], "appears twice"),
        ([entry("run", "symlink", "/bin/sh"), entry("run", "executable")], "appears twice"),
        ([entry("d", "symlink", "/etc"), entry("d/passwd")], "beneath 'd', which is a link"),
        ([entry("d/passwd"), entry("d", "symlink", "/etc")], "beneath 'd', which is a link"),
        ([entry("a"), entry("a/b")], "beneath 'a', which is a file"),
        ([entry("l", "symlink", "")], "empty target"),
    ],
)
def test_unsafe_manifests_are_named(files: list[WorkspaceFile], said: str) -> None:
    problem = unsafe_entry(files)
    assert problem is not None and said in problem


def test_a_type_stored_as_another_encoding_is_refused() -> None:
    link_as_text = WorkspaceFile(
        path="x", type="symlink", size=1, sha256="", encoding="text", content="/etc"
    )
    file_as_link = WorkspaceFile(
        path="y", type="file", size=1, sha256="", encoding="link", content="/etc"
    )
    assert "stored as 'text'" in (unsafe_entry([link_as_text]) or "")
    assert "stored as 'link'" in (unsafe_entry([file_as_link]) or "")
