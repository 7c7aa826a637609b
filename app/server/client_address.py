"""The address a request came from, for the audit trail, wherever a handler's helpers need it.

``ensure_visible`` records an admin's read of another user's session (app/server/access.py)
and is called from every route that names a session; handing each of them the request only
to pass its address along would touch every route. This pure ASGI middleware keeps the
client's address (``scope["client"]``: the peer, or a proxy's ``X-Forwarded-For`` when the
proxy is one ``server_forwarded_allow_ips`` names) in a context variable for the request's task.
"""

from __future__ import annotations

from contextvars import ContextVar

from litestar.types import ASGIApp, Receive, Scope, Send

_ADDRESS: ContextVar[str | None] = ContextVar("chronicle_client_address", default=None)


def client_address() -> str | None:
    """The address of the request being handled (None outside one, or when unknown)."""
    return _ADDRESS.get()


def address_of(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


class ClientAddressMiddleware:
    """Sets ``client_address()`` for the rest of the request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = _ADDRESS.set(address_of(scope) if scope["type"] in ("http", "websocket") else None)
        try:
            await self.app(scope, receive, send)
        finally:
            _ADDRESS.reset(token)
