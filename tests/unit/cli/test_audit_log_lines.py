"""`chronicle audit log` gives every audit kind a line of its own in words: who, how, from
where, and what (never the JSON fallback), so a new kind without words is caught here."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from app.cli.audit_log import audit_line
from app.events import EVENT_TYPES
from app.events.platform_audit import (
    AUDIT_CLASSES,
    PLATFORM_LOG_ID,
    AuditEvent,
    AuditLogin,
    AuditLogout,
    AuditPartitionDetached,
    AuditRedaction,
    AuditSessionErased,
    AuditSessionRead,
    AuditSessionsArchived,
    AuditSessionStarted,
    AuditTokenCreated,
    AuditTokenRevoked,
    AuditUserChanged,
    AuditUserErased,
)
from tests.support.event_log import as_recorded

WHO = {"actor": "root", "via": "api", "address": "192.0.2.4"}
ONE, TWO = uuid.uuid4(), uuid.uuid4()
EXAMPLES: list[tuple[AuditEvent, str]] = [
    (
        AuditTokenCreated(**WHO, token_id=ONE, owner="ann", label="ci", expires_at=None),
        f"token {ONE} for ann 'ci', expires never",
    ),
    (AuditTokenRevoked(**WHO, token_id=ONE, owner="ann"), f"revoked token {ONE} of ann"),
    (
        AuditLogin(**WHO, login_id=ONE, token_id=TWO, expires_at=datetime.now(UTC)),
        f"logged in with token {TWO}: login {ONE}",
    ),
    (AuditLogin(**WHO, login_id=ONE), f"logged in: login {ONE}"),
    (AuditLogout(**WHO, login_id=ONE), f"logged out: login {ONE}"),
    (
        AuditUserChanged(**WHO, name="ann", change="promoted", is_admin=True),
        "user ann promoted (admin)",
    ),
    (
        AuditSessionRead(**WHO, session_id=ONE, owner="ann", token_id=TWO),
        f"read session {ONE} of ann",
    ),
    (
        AuditSessionStarted(
            **WHO, kind="audit.fork_started", session_id=TWO, source_session=ONE, owner="ann"
        ),
        f"started fork {TWO} of session {ONE} of ann",
    ),
    (
        AuditSessionStarted(
            **WHO, kind="audit.replay_started", session_id=TWO, source_session=ONE, owner="ann"
        ),
        f"started replay {TWO} of session {ONE} of ann",
    ),
    (
        AuditSessionsArchived(
            **WHO,
            archived_to="/archives/2026-09",
            manifest="ab" * 32,
            before=datetime(2026, 10, 1, tzinfo=UTC),
            sessions=3,
            events=40,
        ),
        "archived 3 sessions (40 events) that ended before 2026-10-01T00:00:00Z to "
        f"/archives/2026-09 (manifest {'ab' * 32})",
    ),
    (
        AuditPartitionDetached(
            **WHO,
            partition="events_2026_09",
            start=datetime(2026, 9, 1, tzinfo=UTC),
            end=datetime(2026, 10, 1, tzinfo=UTC),
            archived_to="/archives/2026-09",
            manifest="ab" * 32,
        ),
        "detached events_2026_09 (2026-09-01T00:00:00Z to 2026-10-01T00:00:00Z): its sessions "
        "are archived in /archives/2026-09",
    ),
    (
        AuditRedaction(
            **WHO,
            session_id=ONE,
            target_seq=4,
            path="/output",
            removed="cd" * 32,
            recorded_seq=9,
            reason="a pasted key",
        ),
        f"redacted /output of seq 4 of session {ONE}: a pasted key (recorded at seq 9)",
    ),
    (
        AuditSessionErased(
            **WHO,
            session_id=ONE,
            events=12,
            last_hash="ef" * 32,
            erased_at=datetime(2026, 12, 1, tzinfo=UTC),
            policy="older-than-90d",
            key_id="01" * 16,
            signature="02" * 64,
        ),
        f"erased session {ONE} (12 events) by policy older-than-90d; tombstone signed by key "
        f"{'01' * 16}",
    ),
    (
        AuditUserErased(**WHO, user_id=TWO, renamed_to="erased-1a2b3c4d", sessions=3, redacted=5),
        f"erased user {TWO} (now erased-1a2b3c4d): 3 sessions erased, 5 mentions redacted",
    ),
]


@pytest.mark.parametrize(("event", "words"), EXAMPLES, ids=lambda x: getattr(x, "kind", ""))
def test_each_kind_reads_as_words(event: AuditEvent, words: str) -> None:
    line = audit_line(as_recorded(event, PLATFORM_LOG_ID, 7))
    assert line.endswith(f"root (api 192.0.2.4)  {words}"), line
    assert line.lstrip().startswith("7  ")


def test_every_kind_has_an_example() -> None:
    kinds = {kind for kind, cls in EVENT_TYPES.items() if cls in AUDIT_CLASSES}
    assert kinds == {event.kind for event, _ in EXAMPLES}


def test_a_command_on_the_host_says_so() -> None:
    event = AuditUserChanged(actor="cli:ops", via="cli", name="bo", change="added", is_admin=False)
    assert audit_line(as_recorded(event, PLATFORM_LOG_ID, 2)).endswith(
        "cli:ops (cli)  user bo added (user)"
    )
