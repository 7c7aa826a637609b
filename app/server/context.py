"""What every request handler of the access service works with: the store and the settings.

One ``ServerContext`` per app, kept in the app's state (no module-level state) and given to
handlers as the ``ctx`` dependency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from litestar.datastructures import State
from litestar.di import NamedDependency

from app.config import Settings
from app.sessions.platform_audit import AdminReads
from app.store import EventStore


@dataclass(frozen=True)
class ServerContext:
    store: EventStore
    settings: Settings
    #: Which admin reads of other users' sessions this process recorded lately (audit).
    admin_reads: AdminReads = field(default_factory=AdminReads)


def provide_context(state: State) -> ServerContext:
    context: Any = state.context
    assert isinstance(context, ServerContext)
    return context


#: A handler's ``ctx`` parameter: the app's ``ServerContext``, injected by name.
Context = NamedDependency[ServerContext]
