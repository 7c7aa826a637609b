"""The web page: ``/`` (and ``/login``, which signs in with a link's one-time code) and its
static files under ``/web/``, all from ``app/server/web/`` shipped in the package.

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
from litestar.response import Redirect
from litestar.static_files import create_static_files_router
from litestar.types import ControllerRouterHandler

#: The page's files (``index.html``, ``*.js``, ``*.css``, the icon), installed with the package.
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


@get("/", opt=NO_AUTH, include_in_schema=False, sync_to_thread=False)
def index() -> Response[bytes]:
    """The page."""
    return _index()


#: What ``/login?token=...`` answers: that link form signed anyone in whom another site sent
#: there (login CSRF) and left the token in the browser's history, so it signs in nobody now.
OLD_LINK_PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Chronicle: sign-in link changed</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main><h1>This sign-in link no longer works</h1>
<p>Chronicle's sign-in links no longer carry a token: a link now holds a one-time code that
works once, for a few minutes. Ask for a new link (<code>chronicle login-link NAME</code>, or
the one <code>./dev up</code> prints), or <a href="/">sign in</a> by pasting your token.</p>
<p>The token in this link's address may now be in your browser's history: if it is yours,
consider revoking it (<code>chronicle tokens revoke ID</code>) and making a new one.</p>
</main></body></html>
"""


@get("/login", opt=NO_AUTH, include_in_schema=False, sync_to_thread=False)
def login_page(token: str | None = None) -> Response[bytes]:
    """The page, which exchanges a sign-in link's code (``/login#code=...``: in the fragment,
    so it never reaches the server). The old ``/login?token=...`` form signs in nobody."""
    if token is None:
        return _index()
    return Response(
        OLD_LINK_PAGE,
        status_code=410,
        media_type="text/html; charset=utf-8",
        headers=SECURITY_HEADERS,
    )


@get("/favicon.ico", opt=NO_AUTH, include_in_schema=False, sync_to_thread=False)
def favicon() -> Redirect:
    """Where a browser (or a page of another tool) looks for the icon by default: the page's
    own, an SVG (the page names it too; this answers the rest rather than a 404)."""
    return Redirect("/web/favicon.svg", status_code=301)


def web_routes() -> list[ControllerRouterHandler]:
    """What the app factory mounts: the page and its static files, outside the API guard."""
    static: Router = create_static_files_router(
        path="/web",
        directories=[WEB_DIR],
        opt=NO_AUTH,
        include_in_schema=False,
        name="web",
    )
    return [index, login_page, favicon, static]
