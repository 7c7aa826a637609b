"""Sandboxes behind one protocol: local process, Docker container (on this engine or a pool
of them), or a URL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.exports import lazy_exports

if TYPE_CHECKING:
    from app.runtime.client import SandboxClient
    from app.runtime.docker.runtime import DockerRuntime
    from app.runtime.errors import (
        SandboxAuthError,
        SandboxError,
        SandboxStartError,
        SandboxUnavailableError,
    )
    from app.runtime.local.runtime import LocalRuntime
    from app.runtime.protocol import Runtime
    from app.runtime.remote import ProvisionedRuntime, RemoteRuntime

__all__ = [
    "DockerRuntime",
    "LocalRuntime",
    "ProvisionedRuntime",
    "RemoteRuntime",
    "Runtime",
    "SandboxAuthError",
    "SandboxClient",
    "SandboxError",
    "SandboxStartError",
    "SandboxUnavailableError",
]

#: Each export's module, imported on first use: reading the kinds' registry (the API's models,
#: ``--help``) must not import an engine's SDK or start anything.
_EXPORTED_FROM = {
    "SandboxClient": "app.runtime.client",
    "DockerRuntime": "app.runtime.docker.runtime",
    "SandboxAuthError": "app.runtime.errors",
    "SandboxError": "app.runtime.errors",
    "SandboxStartError": "app.runtime.errors",
    "SandboxUnavailableError": "app.runtime.errors",
    "LocalRuntime": "app.runtime.local.runtime",
    "Runtime": "app.runtime.protocol",
    "RemoteRuntime": "app.runtime.remote",
    "ProvisionedRuntime": "app.runtime.remote",
}


__getattr__ = lazy_exports(__name__, _EXPORTED_FROM)
