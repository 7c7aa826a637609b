"""Packages whose exports load on first use (PEP 562).

A package's ``__init__`` that imports its whole public surface makes every importer of one
leaf module pay for all of it: ``app/config`` reads ``app.store.config`` and the kinds'
registry, and each ``chronicle`` command would import the store, the gateway and Docker's SDK
before parsing its arguments. Such a package names each export's module instead (typed for
mypy under ``TYPE_CHECKING``) and sets ``__getattr__ = lazy_exports(__name__, {...})``. The
module imports nothing: every package may use it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``homes[name]`` (a module) on the first use of
    ``name`` and returns its attribute of that name."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home), name)

    return __getattr__
