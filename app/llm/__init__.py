"""The model gateway over litellm: configuration, retries, limits, and a recorded llm.call
event for every call. litellm itself is imported only when a model is actually called.

The names below load on first use (PEP 562): a module that needs only a leaf such as
``app.llm.fingerprint`` (the archive's importers, so every ``chronicle`` command) does not pay
for the gateway and httpx (with its command line's rich, click and pygments) at start."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.exports import lazy_exports

if TYPE_CHECKING:
    from app.llm.config import LlmConfig
    from app.llm.errors import LlmError, LlmNotConfiguredError
    from app.llm.gateway import LlmGateway, LlmReply

__all__ = ["LlmConfig", "LlmError", "LlmGateway", "LlmNotConfiguredError", "LlmReply"]

#: Each exported name and the module that defines it.
_HOMES = {
    "LlmConfig": "app.llm.config",
    "LlmError": "app.llm.errors",
    "LlmNotConfiguredError": "app.llm.errors",
    "LlmGateway": "app.llm.gateway",
    "LlmReply": "app.llm.gateway",
}


__getattr__ = lazy_exports(__name__, _HOMES)
