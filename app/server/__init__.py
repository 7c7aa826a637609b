"""The access service: Litestar app over the store, projections and sessions (never runs an
agent itself; it records events and asks a worker to run the session)."""

from app.server.app import create_app

__all__ = ["create_app"]
