"""The embedded PostgreSQL: Chronicle's own server when no database URL is configured.

``server`` sets it up, starts, inspects and stops it; ``postmaster`` reads whether it runs,
``programs`` runs PostgreSQL's programs (as the server's user when Chronicle is root), and
``auth`` keeps every connection behind a password.
"""

from app.store.embedded.server import EmbeddedPostgres, EmbeddedStatus, EmbeddedUrls

__all__ = ["EmbeddedPostgres", "EmbeddedStatus", "EmbeddedUrls"]
