"""The real third-party programs some tests run, each in a virtualenv of its own:
``scripts/ensure-test-venv NAME`` installs ``scripts/test-venvs/NAME.txt`` into ``.venv-NAME``
(``./dev test`` starts every install in the background as the tests start)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.ci import IN_CI
from tests.support.repository import ROOT


def venv_dir(name: str) -> Path:
    return ROOT / f".venv-{name}"


def installing_pid(name: str) -> int | None:
    """The process installing ``name`` in the background, while it lives; None when none is."""
    try:
        pid = int((ROOT / ".cache" / f"{name}.installing").read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def installed_venv(name: str, wait: float = 900.0) -> Path:
    """``.venv-NAME`` once a background install of it has ended (at most ``wait`` seconds); a
    skip (a failure under CI) when it is not installed."""
    deadline = time.monotonic() + wait
    while installing_pid(name) is not None and time.monotonic() < deadline:
        time.sleep(1)
    venv = venv_dir(name)
    if not (venv / ".installed").exists():
        message = (
            f"scripts/test-venvs/{name}.txt is not installed in {venv}: run "
            f"scripts/ensure-test-venv {name} (./dev test and scripts/ensure-test-services "
            f"run it; its log is .cache/{name}.log)"
        )
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return venv
