"""The model gateway over litellm: configuration, retries, limits, and a recorded llm.call
event for every call. litellm itself is imported only when a model is actually called."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.llm.config import LlmConfig
    from app.llm.errors import LlmError, LlmNotConfiguredError
    from app.llm.gateway import LlmGateway, LlmReply

__all__ = [
    "LlmConfig",
    "LlmError",
    "LlmGateway",
    "LlmNotConfiguredError",
    "LlmReply",
]

#: Each export's module, imported on first use: ``app/config.py`` reads this package's config
#: model, and that must not import the whole package into every command.
_EXPORTED_FROM = {
    "LlmConfig": "app.llm.config",
    "LlmError": "app.llm.errors",
    "LlmNotConfiguredError": "app.llm.errors",
    "LlmGateway": "app.llm.gateway",
    "LlmReply": "app.llm.gateway",
}


def __getattr__(name: str) -> object:
    if name in _EXPORTED_FROM:
        return getattr(importlib.import_module(_EXPORTED_FROM[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
