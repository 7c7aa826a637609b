"""The kinds of sandbox by name, in one place: the factory, the API's and the settings' runtime
fields, the CLI's ``--runtime`` choices, the worker's reapers and the runtime contract suite all
read ``KINDS``.

Adding a kind is a package ``app/runtime/<kind>/`` with a ``kind.py`` that defines its
``SandboxKind`` (and the runtime it makes), plus its line in ``KINDS`` below: the way Inspect
AI's ``@sandboxenv`` or OpenHands' runtime table do it, without an import-time side effect."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated

from pydantic import AfterValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from app.errors import ChronicleError
from app.runtime.docker.kind import KIND as DOCKER
from app.runtime.kind import SandboxKind
from app.runtime.local.kind import KIND as LOCAL

KINDS: Mapping[str, SandboxKind] = MappingProxyType({kind.name: kind for kind in (LOCAL, DOCKER)})
#: The default kind of a session that names none.
DEFAULT = LOCAL.name


def named(names: tuple[str, ...] | None = None) -> str:
    """'local' or 'docker', as an error message lists the kinds."""
    quoted = [f"'{name}'" for name in (names or tuple(KINDS))]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


class UnknownRuntimeKind(ChronicleError, ValueError):
    """A runtime name no kind has."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown runtime {name!r}; use {named()}")


def sandbox_kind(name: str) -> SandboxKind:
    """The kind called ``name``."""
    try:
        return KINDS[name]
    except KeyError:
        raise UnknownRuntimeKind(name) from None


def workspace_inside(runtime: str | None, workspace: str) -> str:
    """The workspace's path inside a sandbox of ``runtime`` (default: the default kind). A
    session recorded elsewhere (``imported``, an outside agent's ``host``) ran on its workspace
    as recorded."""
    kind = KINDS.get(runtime or DEFAULT)
    return workspace if kind is None else kind.workspace_inside(workspace)


def _known(name: str) -> str:
    if name not in KINDS:
        # the error a Literal of the names gave, so that API and settings errors read the same
        raise PydanticCustomError(
            "literal_error", "Input should be {expected}", {"expected": named()}
        )
    return name


#: A runtime's name where a model takes one (the API's requests, the settings, ``RuntimeConfig``):
#: validated against the registry and documented in the JSON schema as its enum.
RuntimeKind = Annotated[
    str, AfterValidator(_known), WithJsonSchema({"type": "string", "enum": list(KINDS)})
]
