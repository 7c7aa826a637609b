"""The files ``./dev test`` hands its workers first exist: a renamed one would quietly go
back to its place in the folder and become the run's tail again."""

from __future__ import annotations

from pathlib import Path

from tests.support.worker_order import SLOWEST_FILES, WORKER_ORDER

ROOT = Path(__file__).resolve().parents[2]


def test_the_slowest_files_listed_exist_in_a_folder_of_the_order() -> None:
    for name in SLOWEST_FILES:
        assert (ROOT / name).is_file(), name
        assert name.split("/")[1] in WORKER_ORDER, name
