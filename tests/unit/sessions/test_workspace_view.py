"""The workspace view from a recorded start and change: the patch split file by file (added,
modified, deleted, binary, a quoted path), the end's files marked, noise folded and counted."""

from __future__ import annotations

import uuid

from app.events.workspace import (
    LeftOut,
    SkippedFile,
    WorkspaceDiff,
    WorkspaceFile,
    WorkspaceSnapshot,
)
from app.runtime.workspace_noise import DEFAULT_LEAVE_OUT
from app.sessions.workspace_view import build_view, header_path, split_patch

Z = "0" * 40
PATCH = f"""diff --git a/app.py b/app.py
index {"1" * 40}..{"2" * 40} 100644
--- a/app.py
+++ b/app.py
@@ -1 +1 @@
-print(1)
+print(2)
diff --git a/data.bin b/data.bin
new file mode 100644
index {Z}..{"3" * 40}
GIT binary patch
literal 4
LcmZQzWMT#Y01f~L

literal 0
HcmV?d00001

diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index {"4" * 40}..{Z}
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git "a/odd\\tname \\"q\\".txt" "b/odd\\tname \\"q\\".txt"
new file mode 100644
index {Z}..{"5" * 40}
--- /dev/null
+++ "b/odd\\tname \\"q\\".txt"
@@ -0,0 +1 @@
+x
diff --git a/pkg/__pycache__/m.cpython-311.pyc b/pkg/__pycache__/m.cpython-311.pyc
new file mode 100644
index {Z}..{"6" * 40}
Binary files /dev/null and b/pkg/__pycache__/m.cpython-311.pyc differ
diff --git a/a b/c b/a b/c
new file mode 100644
index {Z}..{"7" * 40}
--- /dev/null
+++ b/a b/c
@@ -0,0 +1 @@
+spaces
"""


def test_the_patch_file_by_file() -> None:
    parts = split_patch(PATCH)
    assert [(p.path, p.status, p.binary) for p in parts] == [
        ("app.py", "modified", False),
        ("data.bin", "added", True),
        ("gone.txt", "deleted", False),
        ('odd\tname "q".txt', "added", False),
        ("pkg/__pycache__/m.cpython-311.pyc", "added", True),
        ("a b/c", "added", False),
    ]
    assert parts[0].text.startswith("diff --git a/app.py") and "+print(2)\n" in parts[0].text
    assert "".join(p.text for p in parts) == PATCH


def test_a_path_that_holds_its_own_separator() -> None:
    assert header_path("diff --git a/x b/y b/x b/y\n") == "x b/y"
    assert header_path('diff --git "a/caf\\303\\251" "b/caf\\303\\251"\n') == "café"


def snapshot() -> WorkspaceSnapshot:
    def file(path: str, content: str, encoding: str = "text") -> WorkspaceFile:
        return WorkspaceFile(
            path=path, type="file", size=len(content), sha256="s", encoding=encoding,  # type: ignore[arg-type]
            content=content,
        )  # fmt: skip

    return WorkspaceSnapshot(
        vcs="none",
        files=[
            file("app.py", "print(1)\n"),
            file("gone.txt", "bye\n"),
            file("README", "read me\n"),
            file("__pycache__/app.cpython-311.pyc", "AAAA", "base64"),
        ],
        skipped=[SkippedFile(path="big.log", size=10**8, reason="larger than the budget")],
    )


def test_a_plain_start_and_its_change() -> None:
    change = WorkspaceDiff(
        reason="finished", diff=PATCH, left_out=[LeftOut(pattern="*.pyc", files=12)]
    )
    session = uuid.uuid4()
    view = build_view(session, snapshot(), change, DEFAULT_LEAVE_OUT, start_seq=2, change_seq=9)
    by_path = {f.path: f for f in view.files}
    assert list(by_path) == sorted(by_path)
    assert by_path["app.py"].status == "modified" and by_path["app.py"].size == 9
    assert "+print(2)" in by_path["app.py"].diff
    assert by_path["README"].status == "unchanged" and by_path["README"].diff == ""
    assert by_path["gone.txt"].status == "deleted"
    assert by_path["data.bin"].binary and by_path["data.bin"].size is None
    assert by_path["big.log"].skipped == "larger than the budget"
    # noise in the log is listed, marked, and counted apart from the changes
    assert by_path["__pycache__/app.cpython-311.pyc"].noise == "__pycache__"
    assert by_path["pkg/__pycache__/m.cpython-311.pyc"].noise == "__pycache__"
    assert by_path["app.py"].noise is None
    assert (view.added, view.modified, view.deleted) == (3, 1, 1)
    assert view.folded == [LeftOut(pattern="__pycache__", files=2)]
    assert view.left_out == [LeftOut(pattern="*.pyc", files=12)]
    assert view.complete and view.reason == "finished"
    assert (view.start_seq, view.change_seq) == (2, 9)


def test_nothing_folded_without_patterns() -> None:
    view = build_view(uuid.uuid4(), snapshot(), WorkspaceDiff(diff=PATCH), [])
    assert view.folded == [] and all(f.noise is None for f in view.files)
    assert view.added == 4


def test_a_git_start_knows_only_its_uncommitted_files() -> None:
    start = WorkspaceSnapshot(
        vcs="git", commit="a" * 40, branch="main", diff=PATCH.split("diff --git a/data.bin")[0]
    )
    view = build_view(uuid.uuid4(), start, None, DEFAULT_LEAVE_OUT)
    assert [(f.path, f.status) for f in view.files] == [("app.py", "unchanged")]
    assert not view.complete and view.reason is None and view.branch == "main"


def test_no_workspace_recorded() -> None:
    view = build_view(uuid.uuid4(), None, None, DEFAULT_LEAVE_OUT)
    assert view.vcs is None and view.files == [] and view.left_out == []
