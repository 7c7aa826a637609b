"""Which upstream model answers the model name an agent sends (``gateway_*`` settings).

An agent names the model it was built for (``gpt-4o``, ``claude-sonnet-4-5``); the deployment
decides what is called, with its own key:

1. ``gateway_model_map``: a name, or a pattern (``*``, ``gpt-*``; the most specific, i.e.
   longest, pattern first), to a litellm model name: ``{"*": "openai/gpt-4o-mini"}`` sends
   every agent to the model the team pays for;
2. ``gateway_models``: names (or patterns) an agent may ask for as they are (litellm names);
3. the server's own model (``llm_model``), by its full name or its name without the provider
   (``openai/gpt-4o-mini`` answers to ``gpt-4o-mini`` too).

Anything else is refused (404 ``model_not_found``) before a session is touched or the model
called. ``GET /v1/models`` lists the names that are not patterns.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from app.config import Settings
from app.external.errors import GatewayError

#: Longest model name an agent may send (longer is refused, not looked up).
MAX_MODEL_NAME = 256


def _pattern(name: str) -> bool:
    return any(char in name for char in "*?[")


@dataclass(frozen=True)
class ModelRoutes:
    """The deployment's routing of agent model names to upstream models."""

    model_map: dict[str, str]
    allowed: tuple[str, ...]
    own: str | None

    @classmethod
    def of(cls, settings: Settings) -> ModelRoutes:
        return cls(
            model_map=dict(settings.gateway.model_map),
            allowed=tuple(settings.gateway.models),
            own=settings.llm.model,
        )

    def upstream(self, requested: object) -> str:
        """The litellm model that answers ``requested``; ``GatewayError`` 404 when the
        deployment does not allow it (400 when it is not a name at all)."""
        if not isinstance(requested, str) or not requested.strip():
            raise GatewayError(
                400, "invalid_request", "the request must name a model", code="missing_model"
            )
        if len(requested) > MAX_MODEL_NAME:
            raise self._refused(requested[:40] + "...")
        name = requested
        mapped = self.model_map.get(name)
        if mapped is not None:
            return mapped
        patterns = sorted((key for key in self.model_map if _pattern(key)), key=len, reverse=True)
        for pattern in patterns:
            if fnmatch.fnmatchcase(name, pattern):
                return self.model_map[pattern]
        if any(fnmatch.fnmatchcase(name, allowed) for allowed in self.allowed):
            return name
        if self.own and name in (self.own, self.own.rsplit("/", 1)[-1]):
            return self.own
        raise self._refused(name)

    def listed(self) -> list[str]:
        """The names an agent may ask for that are not patterns, in a stable order."""
        names: list[str] = []
        candidates = [*self.model_map, *self.allowed]
        if self.own:
            candidates += [self.own.rsplit("/", 1)[-1], self.own]
        for name in candidates:
            if not _pattern(name) and name not in names:
                names.append(name)
        return names

    def _refused(self, name: str) -> GatewayError:
        listed = ", ".join(self.listed()) or "none"
        return GatewayError(
            404,
            "model_not_found",
            f"the model {name!r} is not allowed by this Chronicle deployment (it allows: "
            f"{listed}); ask for one of those, or ask the operator to allow or map it "
            "(gateway_models, gateway_model_map)",
            code="model_not_found",
        )
