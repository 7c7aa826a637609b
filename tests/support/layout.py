"""The rules of the tests' folders, checked on the source (no test is run or imported).

Where a test goes says what it may use, so that a newcomer finds it and ``./dev test
tests/unit`` stays fast and needs nothing running:

- ``unit/``: pure code. No database and no server (none of the fixtures or helpers that give
  one, no driver's ``connect``), no process of any kind (no ``subprocess``,
  ``asyncio.create_subprocess_*``, ``os.fork``/``spawn*``/``exec*``/``system``, no helper of
  tests/support/ that starts one).
- ``contract/<suite>/``: suites every implementation runs. A test there gets its
  implementation from the suite's conftest and takes no fixture of one implementation, opens
  no connection of its own and reads no implementation's tables (``.pool``).
- ``integration/<package>/``: real PostgreSQL (the tests' shared server) and in-process
  servers, but no process of the test's own: the process rule of unit/ holds here too.
- ``system/<area>/``: real processes (the CLI, sandboxes, agents, servers killed and
  restarted).
- ``support/``: helpers shared by tests, never a test.

Everywhere: no module imports a test module or a conftest (a helper two tests need goes to
support/). One file is exempt from the process rule, by name and with the reason.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

FOLDERS = frozenset({"unit", "contract", "integration", "system", "support"})
TOP_FILES = frozenset({"__init__.py", "conftest.py"})
#: Folders whose tests live one level down, in a folder named for a package or area.
NESTED = frozenset({"contract", "integration", "system"})

#: Fixtures (tests/conftest.py and the suites' conftests) that open a database.
DATABASE_FIXTURES = frozenset(
    {
        "pg_server",
        "pg_address",
        "pg_app_address",
        "pg_template",
        "database_url",
        "app_database_url",
        "store",
        "superuser",
        "app_login",
        "open_store",
        "session_log",
    }
)
#: Fixtures that start a process.
PROCESS_FIXTURES = frozenset(
    {"docker_ready", "runtime", "local_runtime", "docker_runtime", "data_dir"}
)
#: Fixtures of a server a unit test does without (the fake model's HTTP server).
SERVER_FIXTURES = frozenset({"fake_llm"})
#: Fixtures that are one implementation's: a contract test never takes them.
IMPLEMENTATION_FIXTURES = frozenset(
    {
        "pg_server",
        "pg_address",
        "pg_app_address",
        "pg_template",
        "database_url",
        "app_database_url",
        "superuser",
        "app_login",
        "local_runtime",
        "docker_runtime",
    }
)

PROCESS_MODULES = frozenset(
    {
        "subprocess",
        "multiprocessing",
        "pexpect",
        "tests.support.agent_cli",
        "tests.support.cli",
        "tests.support.docker_engine",
        "tests.support.processes",
        "tests.support.sandbox_server",
        "tests.support.sandboxes",
        "tests.support.worker_processes",
    }
)
DRIVER_MODULES = frozenset({"asyncpg", "psycopg", "psycopg2"})
#: Helpers that give a database or a server: the tests' PostgreSQL, the fake model.
SERVER_MODULES = frozenset({"tests.support.postgres", "tests.support.fake_llm"})
#: ``module.function`` calls that start a process or connect to a database.
PROCESS_CALLS = frozenset(
    {
        "asyncio.create_subprocess_exec",
        "asyncio.create_subprocess_shell",
        "os.fork",
        "os.forkpty",
        "os.system",
        "os.popen",
        "os.posix_spawn",
        "os.posix_spawnp",
    }
)
PROCESS_CALL_PREFIXES = ("os.spawn", "os.exec")
DATABASE_CALLS = frozenset(
    {"asyncpg.connect", "asyncpg.create_pool", "psycopg.connect", "EventStore.open"}
)

#: Unit tests that may start a process, and why.
PROCESS_EXEMPT = {
    "unit/test_code_quality.py": "runs the linters (ruff, mypy) over the source, "
    "not code under test",
}


def layout_problems(tests: Path) -> list[str]:
    """Every breach of the rules under the folder ``tests``, one sentence each, naming the
    file relative to it; empty when the layout holds."""
    problems = list(_misplaced(tests))
    for path in sorted(tests.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        where = path.relative_to(tests).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=where)
        problems.extend(f"{where}: {problem}" for problem in _file_problems(where, tree))
    return problems


def _misplaced(tests: Path) -> Iterator[str]:
    for entry in sorted(tests.iterdir()):
        if entry.name == "__pycache__" or entry.name.startswith("."):
            continue
        if entry.is_dir() and entry.name not in FOLDERS:
            yield (
                f"{entry.name}/: not a folder of the layout; tests go in "
                f"{', '.join(sorted(FOLDERS - {'support'}))}, helpers in support"
            )
        elif entry.is_file() and entry.name not in TOP_FILES:
            yield f"{entry.name}: a file at the top; put it in one of {', '.join(sorted(FOLDERS))}"
    for folder in sorted(NESTED):
        for path in sorted((tests / folder).glob("test_*.py")):
            yield (
                f"{folder}/{path.name}: a test directly in {folder}/; put it in a folder "
                f"named for its package or area ({folder}/<name>/)"
            )


def _file_problems(where: str, tree: ast.Module) -> Iterator[str]:
    folder = where.split("/", 1)[0]
    name = where.rsplit("/", 1)[-1]
    yield from _imports_of_tests(where, tree)
    if folder == "support":
        if name.startswith("test_") or name == "conftest.py":
            yield "support/ holds helpers, not tests or fixtures"
        yield from (f"{test} is a test; support/ holds helpers only" for test in _test_names(tree))
    if folder in ("unit", "integration") and where not in PROCESS_EXEMPT:
        kind = "a unit" if folder == "unit" else "an integration"
        yield from (f"starts a process ({what}): {kind} test may not" for what in _processes(tree))
    if folder == "unit":
        yield from (
            f"uses a database or a server ({what}): a unit test may not" for what in _services(tree)
        )
    if folder == "contract" and name != "conftest.py":
        yield from (
            f"{what}: a contract test reaches one implementation; the suite's conftest "
            "gives it the one under test"
            for what in _implementation_specific(tree)
        )


def _imports_of_tests(where: str, tree: ast.Module) -> Iterator[str]:
    package = ["tests", *where.split("/")[:-1]]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(package, node.module, node.level)
            modules = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for module in modules:
            last = module.rsplit(".", 1)[-1]
            if (module.startswith("tests.") or "." not in module) and (
                last.startswith("test_") or last == "conftest"
            ):
                yield f"imports {module}; shared helpers belong in tests/support/"
                break


def _absolute(package: list[str], module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, *([module] if module else [])])


def _test_names(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test_"
        ):
            yield f"{node.name}()"
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            yield f"class {node.name}"


def _imported_modules(tree: ast.Module) -> Iterator[tuple[str, list[str]]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, [alias.name for alias in node.names]


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` for an attribute chain on a name, else ''."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _called(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = _dotted(node.func)
            if called:
                yield called


def _fixtures_requested(tree: ast.Module) -> Iterator[str]:
    """Fixture names a module asks for: parameters of its functions (tests and fixtures),
    ``request.getfixturevalue("name")`` and ``pytest.mark.usefixtures("name")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                yield argument.arg
        elif isinstance(node, ast.Call) and _dotted(node.func).rsplit(".", 1)[-1] in (
            "getfixturevalue",
            "usefixtures",
        ):
            for name in node.args:
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    yield name.value


def _processes(tree: ast.Module) -> Iterator[str]:
    for module, names in _imported_modules(tree):
        if module in PROCESS_MODULES or module.split(".", 1)[0] in PROCESS_MODULES:
            yield f"imports {module}"
        for name in names:
            if f"{module}.{name}" in PROCESS_CALLS or f"{module}.{name}" in PROCESS_MODULES:
                yield f"imports {module}.{name}"
    for called in _called(tree):
        if called in PROCESS_CALLS or called.startswith(PROCESS_CALL_PREFIXES):
            yield f"calls {called}"
    for fixture in sorted(set(_fixtures_requested(tree)) & PROCESS_FIXTURES):
        yield f"the fixture {fixture}"


def _services(tree: ast.Module) -> Iterator[str]:
    for module, _ in _imported_modules(tree):
        if module in SERVER_MODULES:
            yield f"imports {module}"
    for called in _called(tree):
        if called in DATABASE_CALLS or any(called.endswith(f".{c}") for c in DATABASE_CALLS):
            yield f"calls {called}"
    for fixture in sorted(set(_fixtures_requested(tree)) & (DATABASE_FIXTURES | SERVER_FIXTURES)):
        yield f"the fixture {fixture}"


def _implementation_specific(tree: ast.Module) -> Iterator[str]:
    for module, _ in _imported_modules(tree):
        if module.split(".", 1)[0] in DRIVER_MODULES or module == "tests.support.postgres":
            yield f"imports {module}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "pool":
            yield f"reads .pool (line {node.lineno})"
    for fixture in sorted(set(_fixtures_requested(tree)) & IMPLEMENTATION_FIXTURES):
        yield f"takes the fixture {fixture}"
