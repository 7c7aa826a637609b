"""Forks' restores attacked by a non-root user (the test starts this as one), where restore
writes in its own process rather than in a child of the sandbox's uid.

    python nonroot_restore.py '{"base": ..., "victim": ..., "manifests": {name: [entry, ...]}}'

Restores each hostile manifest into a new directory under ``base`` and prints one JSON object:
what each restore said, and who owns what a harmless one wrote.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from app.events import WorkspaceFile, WorkspaceSnapshot
from app.runtime import restore_files
from app.runtime.workspace_restore import restore
from app.runtime.workspace_state import WorkspaceStateError


async def attack(args: dict[str, Any]) -> dict[str, Any]:
    base = Path(args["base"])
    said: dict[str, str] = {}
    for number, (name, entries) in enumerate(args["manifests"].items()):
        files = [WorkspaceFile.model_validate(entry) for entry in entries]
        try:
            await restore(WorkspaceSnapshot(vcs="none", files=files), base / f"r{number}",
                          repository=None)  # fmt: skip
            said[name] = "restored"
        except WorkspaceStateError as exc:
            said[name] = str(exc)
    # Below the rule: the writer in this process, handed the link-first entries directly.
    bypass = base / "bypass"
    bypass.mkdir()
    fd = os.open(bypass, os.O_RDONLY | os.O_DIRECTORY)
    writer: dict[str, str] = {}
    try:
        for name, entries in args["manifests"].items():
            try:
                restore_files.write_entries(fd, entries)
                writer[name] = "written"
            except (restore_files.RestoreRefused, OSError) as exc:
                writer[name] = f"{type(exc).__name__}: {exc}"
    finally:
        os.close(fd)
    good = base / "good"
    entry = {"path": "a/b.txt", "type": "file", "size": 2, "sha256": "", "encoding": "text",
             "content": "b\n"}  # fmt: skip
    snapshot = WorkspaceSnapshot(vcs="none", files=[WorkspaceFile.model_validate(entry)])
    await restore(snapshot, good, repository=None)
    return {
        "uid": os.geteuid(),
        "restore": said,
        "writer": writer,
        "good_owner": os.stat(good / "a" / "b.txt").st_uid,
    }


def main() -> None:
    print(json.dumps(asyncio.run(attack(json.loads(sys.argv[1])))))


if __name__ == "__main__":
    main()
