"""The embedded PostgreSQL: Chronicle's own server when no database URL is configured.

``server`` sets it up, starts, inspects and stops it; ``postmaster`` reads whether it runs,
``programs`` runs PostgreSQL's programs (as the server's user when Chronicle is root),
``auth`` keeps every connection behind a password, ``sockets`` says where its socket lives,
and ``supervisor`` starts it again under a long-lived process when it dies.
"""

from app.store.embedded.server import EmbeddedPostgres, EmbeddedStatus, EmbeddedUrls

__all__ = ["EmbeddedPostgres", "EmbeddedStatus", "EmbeddedUrls"]
