"""Chronicle: an event-sourced backend for AI coding agents on PostgreSQL."""

__version__ = "0.1.0"
