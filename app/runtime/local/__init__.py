"""The local sandbox: the action server on this machine, in a bubblewrap jail.

``runtime`` starts and stops it; ``jail`` says what the jail shows and hides; ``cgroup`` and
``limits`` bound what it may take; ``kind`` is its entry in the kinds' registry.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.runtime.local.limits import SandboxLimits
    from app.runtime.local.runtime import LocalRuntime

__all__ = ["LocalRuntime", "SandboxLimits"]

#: Each export's module, imported on first use: reading the kinds' registry (the API's models,
#: ``--help``) must not import an engine's SDK or start anything.
_EXPORTED_FROM = {
    "SandboxLimits": "app.runtime.local.limits",
    "LocalRuntime": "app.runtime.local.runtime",
}


def __getattr__(name: str) -> object:
    if name in _EXPORTED_FROM:
        return getattr(importlib.import_module(_EXPORTED_FROM[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
