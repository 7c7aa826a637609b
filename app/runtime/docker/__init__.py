"""The Docker sandbox: the action server in a hardened container, one per session.

``runtime`` starts and stops the container; ``hardening`` is what confines it;
``sandbox_user`` and ``private_dir`` are the user it runs as and the private socket
directory; ``reaper`` removes containers whose owner went quiet; ``kind`` is its entry in the
kinds' registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.exports import lazy_exports

if TYPE_CHECKING:
    from app.runtime.docker.runtime import DockerRuntime, container_name

__all__ = ["DockerRuntime", "container_name"]

#: Each export's module, imported on first use: reading the kinds' registry (the API's models,
#: ``--help``) must not import an engine's SDK or start anything.
_EXPORTED_FROM = {
    "DockerRuntime": "app.runtime.docker.runtime",
    "container_name": "app.runtime.docker.runtime",
}


__getattr__ = lazy_exports(__name__, _EXPORTED_FROM)
