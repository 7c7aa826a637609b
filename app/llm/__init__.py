"""The model gateway over litellm: configuration, retries, limits, and a recorded llm.call
event for every call. litellm itself is imported only when a model is actually called."""

from app.llm.config import LlmConfig
from app.llm.errors import LlmError, LlmNotConfiguredError
from app.llm.gateway import LlmGateway, LlmReply

__all__ = ["LlmConfig", "LlmError", "LlmGateway", "LlmNotConfiguredError", "LlmReply"]
