"""The embedded PostgreSQL: Chronicle's own server when no database URL is configured.

``server`` sets it up, starts, inspects and stops it; ``postmaster`` reads whether it runs,
``programs`` runs PostgreSQL's programs (as the server's user when Chronicle is root),
``auth`` keeps every connection behind a password, ``sockets`` says where its socket lives,
``supervisor`` starts it again under a long-lived process when it dies, and ``replica``
makes a hot standby of it (`chronicle db replica`).
"""

from app.store.embedded.replica import (
    STANDBY_PORT,
    EmbeddedReplica,
    ReplicaError,
    ReplicaStatus,
    slot_name,
)
from app.store.embedded.server import EmbeddedPostgres, EmbeddedStatus, EmbeddedUrls

__all__ = [
    "STANDBY_PORT",
    "EmbeddedPostgres",
    "EmbeddedReplica",
    "EmbeddedStatus",
    "EmbeddedUrls",
    "ReplicaError",
    "ReplicaStatus",
    "slot_name",
]
