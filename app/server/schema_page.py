"""``/schema``: the OpenAPI document (``/schema/openapi.json``) and a page of our own that lists
its operations, with no script at all.

Litestar's documentation pages (Swagger UI, Scalar, ...) load their scripts from a CDN,
unpinned, on Chronicle's own origin: whoever serves those files could run code next to the
login cookie. This page is rendered here from the document, every value escaped, and sent with
a Content-Security-Policy that allows no script and no connection anywhere; its one style
block is allowed by its hash. To try requests interactively, load ``openapi.json`` into any
OpenAPI tool.
"""

from __future__ import annotations

import base64
import hashlib
import json
from html import escape
from typing import Any

from litestar import Request, Router
from litestar.datastructures import ResponseHeader
from litestar.openapi.plugins import OpenAPIRenderPlugin

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

STYLE = (
    "body{font:15px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem}"
    "table{border-collapse:collapse}td,th{padding:.2rem .8rem .2rem 0;text-align:left;"
    "vertical-align:top}code,pre{font:13px/1.4 ui-monospace,monospace}"
    "pre{background:#f4f4f4;overflow:auto;padding:.6rem}h2{margin-top:2rem}"
    ".method{font-weight:bold;text-transform:uppercase}"
)


def _hash_source(text: str) -> str:
    digest = hashlib.sha256(text.encode()).digest()
    return "'sha256-" + base64.b64encode(digest).decode() + "'"


#: No script, no connection, no frame, no form: only this page's own style block.
SCHEMA_HEADERS = {
    "Content-Security-Policy": (
        f"default-src 'none'; style-src {_hash_source(STYLE)}; img-src 'self' data:; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def schema_router() -> Router:
    """The router Litestar puts the OpenAPI routes on, each answered with ``SCHEMA_HEADERS``."""
    return Router(
        path="/schema",
        route_handlers=[],
        include_in_schema=False,
        response_headers=[ResponseHeader(name=k, value=v) for k, v in SCHEMA_HEADERS.items()],
    )


def _json(value: Any) -> str:
    return escape(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path, item in sorted((schema.get("paths") or {}).items()):
        for method in METHODS:
            operation = item.get(method) if isinstance(item, dict) else None
            if isinstance(operation, dict):
                found.append((method, path, operation))
    return found


def render_page(schema: dict[str, Any], json_url: str) -> str:
    """The page for ``schema`` (an OpenAPI document as a dict); every value is escaped."""
    info = schema.get("info") or {}
    operations = _operations(schema)
    rows, sections = [], []
    for number, (method, path, operation) in enumerate(operations):
        anchor = f"op{number}"
        summary = escape(str(operation.get("summary") or ""))
        rows.append(
            f'<tr><td class="method">{escape(method)}</td>'
            f'<td><a href="#{anchor}"><code>{escape(path)}</code></a></td><td>{summary}</td></tr>'
        )
        description = escape(str(operation.get("description") or ""))
        sections.append(
            f'<section id="{anchor}"><h3><span class="method">{escape(method)}</span> '
            f"<code>{escape(path)}</code></h3><p>{description}</p>"
            f"<details><summary>parameters, body and responses</summary>"
            f"<pre>{_json(operation)}</pre></details></section>"
        )
    components = (schema.get("components") or {}).get("schemas") or {}
    models = [
        f"<details><summary><code>{escape(name)}</code></summary><pre>{_json(model)}</pre>"
        "</details>"
        for name, model in sorted(components.items())
    ]
    title = escape(f"{info.get('title', 'API')} {info.get('version', '')}".strip())
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title><style>{STYLE}</style></head><body>"
        f"<h1>{title}</h1><p>The OpenAPI document: "
        f'<a href="{escape(json_url)}"><code>{escape(json_url)}</code></a> '
        "(load it into any OpenAPI tool to try requests). Every route but <code>/health/*</code>, "
        "<code>/schema*</code> and the login needs <code>Authorization: Bearer &lt;token&gt;"
        "</code>.</p>"
        f"<table><thead><tr><th>method</th><th>path</th><th>summary</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        f"<h2>Operations</h2>{''.join(sections)}<h2>Schemas</h2>{''.join(models)}"
        "</body></html>"
    )


class SchemaPage(OpenAPIRenderPlugin):
    """The page at ``/schema`` (Litestar's render-plugin interface)."""

    def __init__(self) -> None:
        super().__init__(path="/")

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return render_page(openapi_schema, self.get_openapi_json_route(request)).encode()
