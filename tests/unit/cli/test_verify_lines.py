"""`chronicle verify` says what each recorded redaction proves: one of an event recorded
before migration 0029 (redacted whole, its hash taken as given) proves the event's place,
not what was removed; one since proves both, and says nothing more."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from app.cli.audit import _describe
from app.store import VerifyReport
from app.store.records import RedactionNote

AT = datetime(2026, 12, 3, 12, tzinfo=UTC)


def test_a_redaction_that_proves_only_the_place_says_so() -> None:
    notes = [
        RedactionNote(seq=2, path="", by="alice", at=AT, reason="a pasted key",
                      recorded_at_seq=5, proof="place"),
        RedactionNote(seq=4, path="/content", by="alice", at=AT, reason="its echo",
                      recorded_at_seq=6),
    ]  # fmt: skip
    report = VerifyReport(session_id=uuid.uuid4(), ok=True, checked=6, redactions=notes)
    line = _describe(report)
    assert (
        "seq 2 redacted by alice at 2026-12-03T12:00:00+00:00 (recorded before the upgrade: "
        "proves its place, not what was removed) (a pasted key)"
    ) in line
    assert "seq 4 /content redacted by alice at 2026-12-03T12:00:00+00:00 (its echo)" in line
    assert report.model_dump(mode="json")["redactions"][1]["proof"] == "content"
