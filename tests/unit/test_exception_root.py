"""Every exception class of ``app/`` derives from ``ChronicleError`` (``app/errors.py``): one
class for a caller to catch Chronicle's own errors by. Parsed, not imported: a new error class
whose bases are only Python's is named here with its file and line."""

from __future__ import annotations

import ast
import builtins

from app.errors import ChronicleError
from app.evaluation.suite import SuiteError
from app.events import InvalidEventError
from app.runtime.errors import SandboxStartError
from app.store import StoreError
from tests.support.repository import ROOT

#: Modules that run alone, with the standard library only (``python -I -c SOURCE`` as the
#: sandbox's uid): their errors cannot derive from app's root.
STANDALONE = {"app/runtime/restore_files.py"}
#: Python's exception classes, by name.
PYTHONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def rootless_exceptions(source: str) -> list[tuple[int, str]]:
    """(line, class) for each class of ``source`` whose bases are all Python exceptions."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef) or not node.bases:
            continue
        names = [base.id for base in node.bases if isinstance(base, ast.Name)]
        if len(names) == len(node.bases) and all(name in PYTHONS for name in names):
            found.append((node.lineno, node.name))
    return found


def test_every_error_of_app_has_the_one_root() -> None:
    rootless = [
        f"{path.relative_to(ROOT)}:{line}: class {name}"
        for path in sorted((ROOT / "app").rglob("*.py"))
        if path != ROOT / "app" / "errors.py"  # the root itself
        and path.relative_to(ROOT).as_posix() not in STANDALONE
        for line, name in rootless_exceptions(path.read_text())
    ]
    assert rootless == [], "derive these from app.errors.ChronicleError:\n" + "\n".join(rootless)


def test_the_check_finds_a_rootless_error_and_passes_a_rooted_one() -> None:
    source = (
        "class Lost(ValueError): ...\n"
        "class Kept(ChronicleError, ValueError): ...\n"
        "class Plain: ...\n"
        "class Child(Kept): ...\n"
        "class Both(KeyError, OSError): ...\n"
    )
    assert rootless_exceptions(source) == [(1, "Lost"), (5, "Both")]


def test_a_standalone_module_imports_nothing_of_app() -> None:
    for name in STANDALONE:
        imported = [
            node
            for node in ast.walk(ast.parse((ROOT / name).read_text()))
            if isinstance(node, (ast.Import, ast.ImportFrom))
            and any(
                (getattr(node, "module", None) or alias.name).startswith("app")
                for alias in node.names
            )
        ]
        assert imported == [], name


def test_errors_stay_what_python_knew_them_as() -> None:
    for error in (StoreError, InvalidEventError, SuiteError, SandboxStartError):
        assert issubclass(error, ChronicleError), error
    assert issubclass(InvalidEventError, ValueError) and issubclass(SuiteError, ValueError)
