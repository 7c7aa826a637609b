"""Errors of the execution side; each says what happened and what to do."""

from __future__ import annotations

from app.errors import ChronicleError


class SandboxError(ChronicleError):
    """Base of sandbox errors."""


class SandboxStartError(SandboxError):
    """The sandbox could not be started or did not become ready in time."""


class SandboxUnavailableError(SandboxError):
    """The sandbox stopped answering (crashed, killed, or its host is gone)."""


class SandboxAuthError(SandboxError):
    """The sandbox refused our token."""
