"""Sandboxes behind one protocol: local process, Docker container, or a URL."""

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
from app.runtime.remote import RemoteRuntime

__all__ = [
    "DockerRuntime",
    "LocalRuntime",
    "RemoteRuntime",
    "Runtime",
    "SandboxAuthError",
    "SandboxClient",
    "SandboxError",
    "SandboxStartError",
    "SandboxUnavailableError",
]
