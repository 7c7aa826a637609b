"""The import rule of docs/architecture.md ("Packages and the import rule"), checked on app/.

Every module under app/ is parsed (nothing is imported) and every import counts: at the top,
inside functions, under ``TYPE_CHECKING``. The rule:

- imports point down the stack ``events ← store ← {llm, runtime, tools, projections} ← agent
  ← replay ← sessions ← {evaluation, external, interchange} ← server ← cli``: a package imports
  only lower ones
  (packages on one level never import each other);
- only sessions and above read the app-wide ``Settings`` (``app.config``); ``app/config/``
  builds the lower packages' own config objects and imports nothing from sessions or above;
- ``agent`` imports no runtime implementation (only ``app.runtime.protocol`` / ``errors``);
- ``app/store/subscriptions.py`` does not import ``app/store/event_store.py``;
- outside app/store, the store is imported through its surface: ``app.store`` (its
  ``__init__``) and the public modules and subpackages of ``STORE_SURFACE``, never a private
  module of it (``app.store.event_store``, ``app.store.integrity.anchors``);
- only app/store imports a database driver: a feature's ``sql/`` module takes the driver's
  types and errors from ``app.store`` (``Connection``, ``Record``, ``DatabaseError``, ...),
  so which driver it is, and what its errors mean, is decided in one place;
- only app/store and a feature's own ``sql/`` modules (``app/<package>/sql/``: the tables
  that feature owns) talk to PostgreSQL: nothing else reaches into a store's ``.pool`` or runs
  ``fetch``/``fetchrow``/``fetchval``/``execute`` on a connection it got from a store.

The last check is syntactic, by convention: an object whose name (the last part of a dotted
expression) contains ``store`` is an event store, and a connection is a name bound from an
expression that goes through such an object. The checker is tested on small sources below,
so a rule that stopped matching anything would fail here too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from tests.support.repository import ROOT

APP = ROOT / "app"

#: Each package's place in the stack; a package imports only packages of a lower level.
LEVELS = {
    "errors": -1,  # app/errors.py: the exception root, which every package may import
    "exports": -1,  # app/exports.py: lazy package exports, for every package
    "events": 0,
    "store": 1,
    "llm": 2,
    "runtime": 2,
    "tools": 2,
    "projections": 2,
    "agent": 3,
    "replay": 4,
    "sessions": 5,
    "evaluation": 6,
    "external": 6,  # agents Chronicle does not run: the model gateway (beside evaluation)
    "interchange": 6,  # other formats in and out: OpenTelemetry traces, ATIF (beside them)
    "server": 7,
    "cli": 8,  # the command line starts the server (`chronicle serve`); server never imports cli
}
STACK = (
    "events ← store ← {llm, runtime, tools, projections} ← agent ← replay ← sessions "
    "← {evaluation, external, interchange} ← server ← cli"
)
SETTINGS_READERS = frozenset({"sessions", "evaluation", "external", "server", "cli"})
#: app/config/ sits beside sessions: it may import what sessions may.
CONFIG_LEVEL = LEVELS["sessions"]
#: What agent may know of runtime: the protocol and its errors, no implementation.
RUNTIME_INTERFACE = frozenset({"app.runtime.protocol", "app.runtime.errors"})
#: What of the store the rest of app/ may import (docs/architecture.md, "The store's surface");
#: every other module of app/store is private to it.
STORE_SURFACE = frozenset(
    {
        "app.store",
        "app.store.config",  # the config objects the settings (app/config/) hold
        "app.store.migrate",  # alembic's commands, loaded only by what migrates
        "app.store.analytics",
        "app.store.archive",
        "app.store.embedded",
        "app.store.integrity",
        "app.store.partitions",  # the months of events: made, listed, dropped by the owner
    }
)
DATABASE_DRIVERS = frozenset({"asyncpg", "psycopg", "psycopg2", "sqlalchemy", "alembic"})
SQL_METHODS = frozenset(
    {"fetch", "fetchrow", "fetchval", "execute", "executemany", "copy_records_to_table"}
)
STORE_NAME = re.compile("store", re.IGNORECASE)
SQL_HOME = "app/store, or the owning feature's app/<package>/sql/"


def speaks_sql(path: str) -> bool:
    """app/store, and the modules of a feature's ``sql/`` folder (app/sessions/sql/leases.py),
    may use the driver and run SQL; nothing else may."""
    parts = Path(path).parts
    return parts[:2] == ("app", "store") or (len(parts) >= 4 and parts[2] == "sql")


class Violation(NamedTuple):
    path: str
    line: int
    what: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}: {self.rule}"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(module: str) -> str | None:
    """``app.store.append`` -> ``store``; ``app.config`` -> ``config``; outside app -> None."""
    parts = module.split(".")
    if parts[0] != "app" or len(parts) < 2:
        return None
    return parts[1]


def imported_modules(
    tree: ast.AST, module: str, is_package: bool, root: Path
) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import in ``tree``, at any depth. ``from X import y``
    yields X, and X.y too when that is a module of app/ (``from app.store import migrate``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                relative = Path(*candidate.split("."))
                if (root / relative).with_suffix(".py").exists() or (root / relative).is_dir():
                    yield node.lineno, candidate


def import_violations(
    path: str, module: str, imports: Iterator[tuple[int, str]]
) -> Iterator[Violation]:
    source = package_of(module)
    for line, target in imports:
        top = target.split(".")[0]
        what = f"imports {target}"
        if top in DATABASE_DRIVERS and source != "store":
            yield Violation(
                path,
                line,
                what,
                "only app/store imports the database driver; a feature's sql/ module takes "
                "Connection, Record and the errors it catches from app.store",
            )
        wanted = package_of(target)
        if wanted == "store" and source != "store" and target not in STORE_SURFACE:
            yield Violation(
                path,
                line,
                what,
                "a private module of the store: import it from app.store (or one of its public "
                f"parts: {', '.join(sorted(STORE_SURFACE - {'app.store'}))})",
            )
        if wanted is None or wanted == source:
            if module == "app.store.subscriptions" and target == "app.store.event_store":
                yield Violation(
                    path,
                    line,
                    what,
                    "subscriptions need only what their SubscriptionSource protocol names, "
                    "not the EventStore",
                )
            continue
        if wanted == "config":
            if source not in SETTINGS_READERS:
                yield Violation(
                    path,
                    line,
                    what,
                    "only sessions and above (sessions, evaluation, external, server, cli) read "
                    "the app-wide Settings; take a config object of this package's own, held by "
                    "app/config/",
                )
            continue
        if wanted not in LEVELS:
            yield Violation(path, line, what, f"app.{wanted} has no place in the stack {STACK}")
            continue
        level = CONFIG_LEVEL if source == "config" else LEVELS.get(source or "")
        if level is None:
            continue  # app/__init__.py, or an unknown package (reported on its own)
        if source == "config" and LEVELS[wanted] >= CONFIG_LEVEL:
            yield Violation(
                path,
                line,
                what,
                "app/config/ holds the config objects of packages below sessions; it "
                "imports nothing from sessions or above",
            )
        elif source != "config" and LEVELS[wanted] == level:
            yield Violation(
                path,
                line,
                what,
                f"{source} and {wanted} sit side by side in {STACK}: neither imports the "
                "other; they meet in the log, wired in app/sessions",
            )
        elif source != "config" and LEVELS[wanted] > level:
            yield Violation(
                path,
                line,
                what,
                f"imports point down the stack {STACK}: {source} may not import {wanted}",
            )
        elif source == "agent" and wanted == "runtime" and target not in RUNTIME_INTERFACE:
            yield Violation(
                path,
                line,
                what,
                "agent never imports a runtime implementation (only app.runtime.protocol "
                "and app.runtime.errors)",
            )


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _through_store(node: ast.AST) -> bool:
    """An expression that goes through a store: ``store.pool.acquire()``, ``self._store.x``."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute):
            name = _last_name(inner.value)
            if name is not None and STORE_NAME.search(name):
                return True
    return False


def _store_pool_uses(tree: ast.AST, path: str) -> Iterator[Violation]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("pool", "_pool"):
            owner = _last_name(node.value)
            if owner is not None and STORE_NAME.search(owner):
                yield Violation(
                    path,
                    node.lineno,
                    f"uses {ast.unparse(node)}",
                    f"nothing outside {SQL_HOME} reaches into the store's connection pool; "
                    "add a function for the query there",
                )


def _store_connections(scope: ast.AST) -> set[str]:
    """Names bound in ``scope`` to something got from a store (``async with store.pool
    .acquire() as c``, ``c = await store.pool.acquire()``)."""
    names: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if isinstance(item.optional_vars, ast.Name) and _through_store(item.context_expr):
                    names.add(item.optional_vars.id)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _through_store(node.value):
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _sql_on_store_connections(tree: ast.AST, path: str) -> Iterator[Violation]:
    scopes = [tree] + [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    seen: set[tuple[int, int]] = set()
    for scope in scopes:
        connections = _store_connections(scope)
        for node in ast.walk(scope):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_METHODS
            ):
                continue
            receiver = node.func.value
            direct = isinstance(receiver, ast.Name) and receiver.id in connections
            if (direct or _through_store(receiver)) and (node.lineno, node.col_offset) not in seen:
                seen.add((node.lineno, node.col_offset))
                yield Violation(
                    path,
                    node.lineno,
                    f"runs {ast.unparse(node.func)}(...)",
                    f"nothing outside {SQL_HOME} runs SQL on the store's connections; add "
                    "a function for the query there",
                )


def sql_violations(tree: ast.AST, path: str) -> Iterator[Violation]:
    yield from _store_pool_uses(tree, path)
    yield from _sql_on_store_connections(tree, path)


def check_source(text: str, relative: str, root: Path = ROOT) -> list[Violation]:
    """Every violation in one module's source; ``relative`` is its path, e.g. app/x/y.py."""
    path = Path(relative)
    module = module_name(root / path, root)
    tree = ast.parse(text, filename=relative)
    imports = imported_modules(tree, module, path.name == "__init__.py", root)
    found = list(import_violations(relative, module, imports))
    if not speaks_sql(relative):
        found += sql_violations(tree, relative)
    return found


def app_modules() -> list[Path]:
    return sorted(p for p in APP.rglob("*.py") if "__pycache__" not in p.parts)


def test_app_follows_the_import_rule() -> None:
    modules = app_modules()
    assert len(modules) > 50, "app/ was not found"
    violations = [
        violation
        for path in modules
        for violation in check_source(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert not violations, "against docs/architecture.md's import rule:\n" + "\n".join(
        map(str, violations)
    )


def test_every_package_has_a_place_in_the_stack() -> None:
    packages = {p.name for p in APP.iterdir() if (p / "__init__.py").exists()}
    placed = {*LEVELS, "config"}  # app/config sits beside sessions (CONFIG_LEVEL)
    assert packages - placed == set(), "add it to LEVELS and to docs/architecture.md"


# -- the checker itself ------------------------------------------------------------------------


def test_settings_below_sessions_are_found_at_any_depth() -> None:
    text = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from app.config import Settings\n"
        "def later():\n"
        "    import app.config\n"
    )
    found = check_source(text, "app/store/anything.py")
    assert [v.line for v in found] == [3, 5]
    assert all("only sessions and above" in v.rule for v in found)
    assert check_source(text, "app/sessions/anything.py") == []


def test_imports_up_the_stack_and_across_a_level_are_found() -> None:
    assert (
        "imports point down the stack"
        in check_source("from app.agent.controller import AgentController\n", "app/runtime/x.py")[
            0
        ].rule
    )
    assert "side by side" in check_source("from app import tools\n", "app/runtime/x.py")[0].rule
    assert "side by side" in check_source("from ..tools import mcp\n", "app/runtime/x.py")[0].rule
    assert check_source("from app.store import EventStore\n", "app/runtime/x.py") == []
    config = check_source("from app.sessions.runner import run_session\n", "app/config/__init__.py")
    assert "imports nothing from sessions" in config[0].rule


def test_agent_may_know_only_the_runtime_protocol() -> None:
    assert check_source("from app.runtime.protocol import Runtime\n", "app/agent/x.py") == []
    found = check_source("from app.runtime import LocalRuntime\n", "app/agent/x.py")
    assert "runtime implementation" in found[0].rule


def test_subscriptions_do_not_import_the_event_store() -> None:
    for text in (
        "from app.store.event_store import EventStore\n",
        "from app.store import event_store\n",
        "from . import event_store\n",
    ):
        found = check_source(text, "app/store/subscriptions.py")
        assert any("SubscriptionSource" in v.rule for v in found), text
    assert check_source("from app.store.records import Position\n", "app/store/x.py") == []


def test_private_store_modules_are_found_outside_the_store() -> None:
    for text in (
        "from app.store.event_store import EventStore\n",
        "from app.store import event_store\n",
        "import app.store.records\n",
        "from app.store.integrity.anchors import sign_anchor\n",
    ):
        found = check_source(text, "app/sessions/x.py")
        assert [v.rule for v in found if "private module" in v.rule], text
        assert check_source(text, "app/store/x.py") == []
    for text in (
        "from app.store import EventStore, claim_session\n",
        "from app.store import migrate\n",
        "from app.store.config import StoreConfig\n",
        "from app.store.integrity import sign_anchor\n",
    ):
        assert check_source(text, "app/sessions/x.py") == [], text


def test_sql_outside_the_store_is_found() -> None:
    text = (
        "import asyncpg\n"
        "async def rows(store, self):\n"
        "    await store.pool.fetch('SELECT 1')\n"
        "    async with self._store.pool.acquire() as connection:\n"
        "        await connection.execute('DELETE FROM events')\n"
        "    held = await store.pool.acquire()\n"
        "    await held.fetchval('SELECT 1')\n"
        "    await runtime.execute(action)\n"
    )
    found = check_source(text, "app/sessions/x.py")
    assert sorted({v.line for v in found}) == [1, 3, 4, 5, 6, 7]
    assert check_source(text, "app/store/x.py") == []


def test_a_features_sql_module_may_speak_sql() -> None:
    text = (
        "from app.store import DatabaseError\n"
        "async def rows(store):\n"
        "    async with store.pool.acquire() as connection:\n"
        "        await connection.execute('DELETE FROM session_leases')\n"
    )
    assert check_source(text, "app/sessions/sql/session_leases.py") == []
    assert check_source(text, "app/sessions/sql/__init__.py") == []
    # a module merely named sql, or sql/ below a deeper folder of the feature, is not one
    assert sorted({v.line for v in check_source(text, "app/sessions/sql.py")}) == [3, 4]
    assert sorted({v.line for v in check_source(text, "app/sessions/x/sql/y.py")}) == [3, 4]


def test_a_features_sql_module_names_the_driver_through_the_store() -> None:
    for text in ("import asyncpg\n", "from asyncpg import Record\n", "import asyncpg.pool\n"):
        found = check_source(text, "app/sessions/sql/session_leases.py")
        assert [v.line for v in found] == [1], text
        assert "only app/store imports the database driver" in found[0].rule
        assert check_source(text, "app/store/x.py") == []
