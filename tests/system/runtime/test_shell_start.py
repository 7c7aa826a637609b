"""The sandbox's shell starts reliably, also while other threads fork and read terminals.

Before: the terminal was set to plain newlines only after the fork, so a bash quick to print
its first prompt printed it with ``\\r\\n``, which the prompt pattern never matched (the start
hung 10 s, then failed), and the reader of a replaced bash could still read, and mark dead,
the terminal that took over its number. 100 starts in 4 threads failed 2 to 4 times each run.
"""

from __future__ import annotations

import importlib
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

from app.runtime.image import RUNTIME_IMAGE_DIR


@pytest.fixture
def shell_module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(RUNTIME_IMAGE_DIR))
    return importlib.import_module("chronicle_sandbox.shell")


def test_many_starts_and_restarts_in_threads(shell_module: ModuleType, tmp_path: Path) -> None:
    failures: list[str] = []
    slowest = 0.0

    def starts(worker: int) -> None:
        nonlocal slowest
        for attempt in range(25):
            started = time.monotonic()
            try:
                shell = shell_module.Shell(str(tmp_path), {"PATH": "/usr/bin:/bin"})
                shell.run("exit", None, False)  # the next command starts a new bash
                reborn = shell.run("echo reborn", None, False)
                shell.close()
                if "reborn\n" not in reborn["output"] or reborn["exit_code"] != 0:
                    failures.append(f"{worker}/{attempt}: {reborn}")
            except Exception as exc:  # any failure to start is what this test is about
                failures.append(f"{worker}/{attempt}: {exc!r}")
            slowest = max(slowest, time.monotonic() - started)

    threads = [threading.Thread(target=starts, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert slowest < 5, f"a start took {slowest:.1f} s"
