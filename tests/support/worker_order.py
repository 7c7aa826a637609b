"""The order in which ``./dev test`` hands the suite's files to its workers (pytest-xdist,
``--dist loadfile``; applied by ``tests/conftest.py``)."""

from __future__ import annotations

#: The folders in the order their files go to the workers under ``./dev test`` (pytest-xdist,
#: ``--dist loadfile``): the slow ones first, so that the run does not end on one worker with
#: a long file while the others idle; the unit files fill the gaps at the end.
WORKER_ORDER = ("system", "integration", "contract", "unit")
#: Files of two minutes or more on one worker (``--durations`` of a full run), handed out
#: first, before every folder: started last, one of them alone would be the run's tail. The
#: code-quality file (mypy: a minute or more of CPU) is a unit file that goes early so too.
SLOWEST_FILES = (
    "tests/system/cli/test_cli.py",
    "tests/system/package/test_package.py",
    "tests/system/server/test_logins.py",
    "tests/unit/test_code_quality.py",
    "tests/system/docs/test_docs_examples.py",
    "tests/system/analytics/test_analytics_cli.py",
    "tests/system/server/test_streams.py",
    "tests/system/replay/test_fork_hostile_snapshot.py",
    "tests/system/external/test_record_replay.py",
)
