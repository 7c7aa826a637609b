"""The local sandbox: the action server on this machine, in a bubblewrap jail.

``runtime`` starts and stops it; ``jail`` says what the jail shows and hides; ``cgroup`` and
``limits`` bound what it may take; ``kind`` is its entry in the kinds' registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.exports import lazy_exports

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


__getattr__ = lazy_exports(__name__, _EXPORTED_FROM)
