"""The platform's own audit trail: who could see and do what, as events of one well-known stream.

Sessions record what an agent did; auditors also ask who was given a token, who signed in
from where, who was made an admin, and which admin read or forked someone else's session.
Those are ``audit.*`` events in a stream of their own, ``PLATFORM_LOG_ID``, in the same
events table: the same hash chain, append functions, ``verify`` and anchors as any session,
for no code of its own. Its ``session.created`` (``platform_log_created``) marks it in its
config; it is nobody's session (the access service shows it to no one as a session, the
``session_state`` projection leaves it out) and admins read it as the audit log.

No secret ever enters it: a token is named by its id, never its value; there are no
passwords to record.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import Field

from app.events.base import Event, Source
from app.events.lifecycle import SessionCreated
from app.events.session_config import SessionConfig

#: The platform log's stream id: fixed, so every process and every SQL view names the same one.
PLATFORM_LOG_ID = UUID("00000000-0000-4000-8000-00000000a0d1")
#: Its ``session.created``'s event id: fixed too, so two processes creating it at once record
#: it once (the second append is a re-send of the first).
PLATFORM_LOG_CREATED_ID = UUID("00000000-0000-4000-8000-00000000a0d2")
#: The config key that marks the platform log in its ``session.created``.
PLATFORM_LOG_MARK = SessionConfig.stored_key("platform_log")

#: Where an audited action came from: the HTTP API, or the ``chronicle`` command on the host.
Via = Literal["api", "cli"]


def platform_log_created() -> SessionCreated:
    """The platform log's first event."""
    return SessionCreated(
        event_id=PLATFORM_LOG_CREATED_ID,
        title="Chronicle platform audit log",
        config=SessionConfig(platform_log=True),
    )


class AuditEvent(Event):
    """Who did it (``actor``: a user's name through the API, ``cli:<login>`` on the host),
    through what, and from which address (the HTTP client's; None on the host)."""

    source: Source = "system"
    actor: str = Field(min_length=1, max_length=200)
    via: Via = "api"
    address: str | None = Field(default=None, max_length=200)


class AuditTokenCreated(AuditEvent):
    """An API token was made for ``owner`` (its id, never its value)."""

    kind: Literal["audit.token_created"] = "audit.token_created"
    token_id: UUID
    owner: str = Field(min_length=1, max_length=64)
    label: str = Field(default="", max_length=1000)
    expires_at: datetime | None = None


class AuditTokenRevoked(AuditEvent):
    kind: Literal["audit.token_revoked"] = "audit.token_revoked"
    token_id: UUID
    owner: str | None = Field(default=None, max_length=64)


class AuditLogin(AuditEvent):
    """A browser login: ``login_id`` is the login's own (cookie) token, ``token_id`` the
    credential it was obtained with (None when that was not a token, e.g. a one-time code)."""

    kind: Literal["audit.login"] = "audit.login"
    login_id: UUID
    token_id: UUID | None = None
    expires_at: datetime | None = None


class AuditLogout(AuditEvent):
    kind: Literal["audit.logout"] = "audit.logout"
    login_id: UUID


class AuditUserChanged(AuditEvent):
    """``name`` was added, disabled, enabled, removed, demoted or promoted, or its browser
    logins were ended; ``is_admin`` is the role it has afterwards, when known."""

    kind: Literal["audit.user_changed"] = "audit.user_changed"
    name: str = Field(min_length=1, max_length=64)
    change: str = Field(min_length=1, max_length=64)
    is_admin: bool | None = None


class AuditSessionRead(AuditEvent):
    """An admin reached a session ``owner`` owns (recorded once per admin credential and
    session per hour; see app/sessions/platform_audit.py)."""

    kind: Literal["audit.session_read"] = "audit.session_read"
    session_id: UUID
    owner: str = Field(min_length=1, max_length=64)
    token_id: UUID


class AuditSessionStarted(AuditEvent):
    """An admin started a fork or a replay (``session_id``) of ``source``, a session
    ``owner`` owns."""

    kind: Literal["audit.fork_started", "audit.replay_started"]
    session_id: UUID
    source_session: UUID
    owner: str = Field(min_length=1, max_length=64)


class AuditSessionsArchived(AuditEvent):
    """``chronicle archive`` wrote ``sessions`` sessions (``events`` events) that ended before
    ``before`` to the archive ``archived_to``, whose manifest.json has sha256 ``manifest``;
    their ``sessions`` rows say so from now on."""

    kind: Literal["audit.sessions_archived"] = "audit.sessions_archived"
    archived_to: str = Field(min_length=1, max_length=4096)
    #: sha256 hex of the archive's manifest.json (what the sessions' rows record).
    manifest: str = Field(max_length=64)
    before: datetime
    sessions: int = Field(ge=1)
    events: int = Field(ge=1)


class AuditPartitionDetached(AuditEvent):
    """A month of ``events`` (``partition``, from ``start`` up to ``end``) was detached after
    every session with events in it was archived (to ``archived_to``, manifest ``manifest``):
    why those events are no longer in the log."""

    kind: Literal["audit.partition_detached"] = "audit.partition_detached"
    partition: str = Field(min_length=1, max_length=200)
    start: datetime
    end: datetime
    archived_to: str = Field(min_length=1, max_length=4096)
    #: sha256 hex of the archive's manifest.json (what the sessions' rows record).
    manifest: str = Field(max_length=64)


class AuditRedaction(AuditEvent):
    """Content of ``session_id``'s event ``target_seq`` (the part at ``path``, a JSON Pointer;
    "" the whole payload) was redacted, as the session's own ``redaction`` event at
    ``recorded_seq`` says with its digest: the platform's copy of the record, so an admin's
    removals are listed in one place whoever owns the sessions."""

    kind: Literal["audit.redaction"] = "audit.redaction"
    session_id: UUID
    target_seq: int = Field(ge=1)
    path: str = Field(max_length=4096)
    removed: str = Field(pattern=r"^[0-9a-f]{64}$")
    recorded_seq: int = Field(ge=1)
    reason: str = Field(min_length=1, max_length=2000)


class AuditSessionErased(AuditEvent):
    """``session_id`` was erased: its ``events`` events, ending with hash ``last_hash``, were
    deleted under ``policy``, leaving the tombstone signed by ``key_id`` (``signature``) that
    its ``sessions`` row keeps (docs/erasure.md)."""

    kind: Literal["audit.session_erased"] = "audit.session_erased"
    session_id: UUID
    events: int = Field(ge=1)
    last_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    erased_at: datetime
    policy: str = Field(min_length=1, max_length=200)
    key_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    signature: str = Field(pattern=r"^[0-9a-f]{128}$")


class AuditUserErased(AuditEvent):
    """A person was erased (``chronicle users erase``): user ``user_id`` lost its name (now
    ``renamed_to``), its tokens and logins; ``sessions`` of theirs were erased and
    ``redacted`` mentions of the name in this log were redacted."""

    kind: Literal["audit.user_erased"] = "audit.user_erased"
    user_id: UUID
    renamed_to: str = Field(min_length=1, max_length=64)
    sessions: int = Field(ge=0)
    redacted: int = Field(ge=0)


AUDIT_CLASSES: tuple[type[AuditEvent], ...] = (
    AuditTokenCreated,
    AuditTokenRevoked,
    AuditLogin,
    AuditLogout,
    AuditUserChanged,
    AuditSessionRead,
    AuditSessionStarted,
    AuditSessionsArchived,
    AuditPartitionDetached,
    AuditRedaction,
    AuditSessionErased,
    AuditUserErased,
)

#: The kinds this module declares; app/events/registry.py registers every module's.
KIND_CLASSES: tuple[type[Event], ...] = AUDIT_CLASSES
