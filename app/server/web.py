"""The web page: ``/`` (and ``/login``, which signs in with ``?token=``) and its static files
under ``/web/``, all from ``app/server/web/`` shipped in the package.

The page is plain HTML, JavaScript modules and CSS written here: no build step, nothing
fetched from another site. It talks to the same API as any client (the login cookie and its
CSRF header, the live stream as Server-Sent Events). Its files are public (they hold no data);
everything they show comes from the authenticated API. A strict Content-Security-Policy keeps
the page to its own origin, so even a script smuggled into an event's text could not run or
send anything elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from litestar import Response, Router, get
from litestar.static_files import create_static_files_router
from litestar.types import ControllerRouterHandler

#: The page's files (``index.html``, ``*.js``, ``*.css``), installed with the package.
WEB_DIR = Path(__file__).parent / "web"
#: The route option the authentication middleware skips (``create_app``'s exclude key).
NO_AUTH = {"exclude_from_auth": True}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _index() -> Response[bytes]:
    return Response(
        (WEB_DIR / "index.html").read_bytes(),
        media_type="text/html; charset=utf-8",
        headers=SECURITY_HEADERS,
    )


@get(["/", "/login"], opt=NO_AUTH, include_in_schema=False, sync_to_thread=False)
def index() -> Response[bytes]:
    """The page; at ``/login?token=...`` it signs in with the token and drops it from the
    address bar (the token never reaches the server in a URL it logs: the page posts it)."""
    return _index()


def web_routes() -> list[ControllerRouterHandler]:
    """What the app factory mounts: the page and its static files, outside the API guard."""
    static: Router = create_static_files_router(
        path="/web",
        directories=[WEB_DIR],
        opt=NO_AUTH,
        include_in_schema=False,
        name="web",
    )
    return [index, static]
