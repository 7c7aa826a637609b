"""The tests' folders hold to their rules (tests/support/layout.py): this checkout's, and a
deliberately misplaced file in a copy of the layout is caught, each rule by its own case."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.layout import layout_problems
from tests.support.repository import ROOT


def test_this_checkout_holds_to_the_layout() -> None:
    assert layout_problems(ROOT / "tests") == []


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def tests(tmp_path: Path) -> Path:
    """A small tests folder that holds to every rule, one file of each kind."""
    root = tmp_path / "tests"
    for name in (
        "__init__.py",
        "conftest.py",
        "unit/__init__.py",
        "unit/events/__init__.py",
        "contract/store/__init__.py",
        "integration/store/__init__.py",
        "system/cli/__init__.py",
        "support/__init__.py",
    ):
        write(root, name, "")
    write(
        root,
        "unit/events/test_kinds.py",
        "import asyncpg\n"
        "from tests.support.helpers import build\n\n"
        "def test_pure(tmp_path, monkeypatch) -> None:\n"
        "    assert build(asyncpg.UniqueViolationError)\n",
    )
    write(
        root,
        "contract/store/conftest.py",
        "import asyncpg\n\n"
        "def store(app_database_url):\n"
        "    return asyncpg.connect(app_database_url)\n",
    )
    write(root, "contract/store/test_append.py", "async def test_append(store) -> None: ...\n")
    write(
        root,
        "integration/store/test_roles.py",
        "from tests.support.postgres import database_name\n\n"
        "async def test_roles(store, superuser, fake_llm) -> None:\n"
        "    await store.pool.fetchval('SELECT 1')\n",
    )
    write(
        root,
        "system/cli/test_run.py",
        "import subprocess\n\n"
        "def test_run(data_dir) -> None:\n"
        "    subprocess.run(['true'], check=True)\n",
    )
    write(root, "support/helpers.py", "def build(value):\n    return value\n")
    return root


def test_a_layout_that_holds_has_no_problems(tests: Path) -> None:
    assert layout_problems(tests) == []


@pytest.mark.parametrize(
    ("relative", "text", "problem"),
    [
        ("e2e/test_old.py", "def test_x() -> None: ...\n", "e2e/: not a folder of the layout"),
        ("test_loose.py", "def test_x() -> None: ...\n", "test_loose.py: a file at the top"),
        (
            "integration/test_flat.py",
            "def test_x() -> None: ...\n",
            "integration/test_flat.py: a test directly in integration/",
        ),
        (
            "unit/store/test_subprocess.py",
            "import subprocess\n",
            "unit/store/test_subprocess.py: starts a process (imports subprocess)",
        ),
        (
            "unit/store/test_spawn.py",
            "import asyncio\n\n"
            "async def test_x() -> None:\n"
            "    await asyncio.create_subprocess_exec('true')\n",
            "starts a process (calls asyncio.create_subprocess_exec)",
        ),
        (
            "unit/store/test_spawn_import.py",
            "from asyncio import create_subprocess_shell\n",
            "starts a process (imports asyncio.create_subprocess_shell)",
        ),
        (
            "unit/store/test_fork.py",
            "import os\n\ndef test_x() -> None:\n    os.execv('/bin/true', ['true'])\n",
            "starts a process (calls os.execv)",
        ),
        (
            "unit/runtime/test_sandbox.py",
            "from tests.support.sandboxes import started_runtime\n",
            "starts a process (imports tests.support.sandboxes)",
        ),
        (
            "unit/store/test_append.py",
            "async def test_x(store) -> None: ...\n",
            "uses a database or a server (the fixture store)",
        ),
        (
            "unit/store/test_url.py",
            "import pytest\n\n"
            "@pytest.mark.usefixtures('database_url')\n"
            "def test_x() -> None: ...\n",
            "uses a database or a server (the fixture database_url)",
        ),
        (
            "unit/store/test_lookup.py",
            "def test_x(request) -> None:\n    request.getfixturevalue('app_database_url')\n",
            "uses a database or a server (the fixture app_database_url)",
        ),
        (
            "unit/store/test_connect.py",
            "import asyncpg\n\nasync def test_x() -> None:\n    await asyncpg.connect('')\n",
            "uses a database or a server (calls asyncpg.connect)",
        ),
        (
            "unit/llm/test_gateway.py",
            "def test_x(fake_llm) -> None: ...\n",
            "uses a database or a server (the fixture fake_llm)",
        ),
        (
            "integration/store/test_crash.py",
            "import signal, subprocess\n",
            "integration/store/test_crash.py: starts a process (imports subprocess)",
        ),
        (
            "integration/store/test_server.py",
            "def test_x(data_dir) -> None: ...\n",
            "starts a process (the fixture data_dir)",
        ),
        (
            "system/cli/test_reuse.py",
            "from tests.unit.events.test_kinds import test_pure\n",
            "imports tests.unit.events.test_kinds; shared helpers belong in tests/support/",
        ),
        (
            "system/cli/test_relative.py",
            "from ..cli.test_run import test_run\n",
            "imports tests.system.cli.test_run;",
        ),
        (
            "system/cli/test_fixture.py",
            "from tests.conftest import settings\n",
            "imports tests.conftest;",
        ),
        (
            "integration/store/test_local_conftest.py",
            "from .conftest import store\n",
            "imports tests.integration.store.conftest;",
        ),
        (
            "support/checks.py",
            "def test_helper() -> None: ...\n",
            "support/checks.py: test_helper() is a test; support/ holds helpers only",
        ),
        (
            "support/test_helpers.py",
            "",
            "support/test_helpers.py: support/ holds helpers, not tests",
        ),
        (
            "support/conftest.py",
            "",
            "support/conftest.py: support/ holds helpers, not tests or fixtures",
        ),
        (
            "contract/store/test_rows.py",
            "async def test_x(store) -> None:\n    await store.pool.fetch('SELECT 1')\n",
            "contract/store/test_rows.py: reads .pool (line 2): a contract test reaches one "
            "implementation",
        ),
        (
            "contract/store/test_superuser.py",
            "async def test_x(store, superuser) -> None: ...\n",
            "takes the fixture superuser",
        ),
        (
            "contract/store/test_driver.py",
            "import asyncpg\n",
            "imports asyncpg",
        ),
        (
            "contract/runtime/test_local.py",
            "async def test_x(local_runtime) -> None: ...\n",
            "takes the fixture local_runtime",
        ),
    ],
)
def test_a_misplaced_file_is_named(tests: Path, relative: str, text: str, problem: str) -> None:
    write(tests, relative, text)
    problems = layout_problems(tests)
    assert len(problems) >= 1 and all(relative.split("/")[0] in found for found in problems)
    assert any(problem in found for found in problems), problems


def test_the_linters_test_alone_may_start_a_process(tests: Path) -> None:
    linters = "import subprocess\n\ndef test_lint() -> None:\n    subprocess.run(['ruff'])\n"
    write(tests, "unit/test_code_quality.py", linters)
    assert layout_problems(tests) == []
    write(tests, "unit/test_other_quality.py", linters)
    assert layout_problems(tests) == [
        "unit/test_other_quality.py: starts a process (imports subprocess): a unit test may not"
    ]
