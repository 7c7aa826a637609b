"""What a database superuser can do behind the application's back: edit an event and make the
hash chain and the session's head agree again, so that only anchors can tell."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from app.events.canonical import chain_hash, hashed_document


def rewrite_payload(database_url: str, session: str, seq: int, payload: dict[str, Any]) -> None:
    """Replace event ``seq``'s payload, then re-hash the whole session and move its head."""
    with psycopg.connect(database_url) as attacker, attacker.transaction():
        attacker.execute("SET LOCAL session_replication_role = replica")  # triggers off
        attacker.execute(
            "UPDATE events SET payload = %s::jsonb WHERE session_id = %s AND seq = %s",
            (json.dumps(payload), session, seq),
        )
        rows = attacker.execute(
            "SELECT seq, event_id, kind, source, cause, payload, schema_version, created_at "
            "FROM events WHERE session_id = %s ORDER BY seq",
            (session,),
        ).fetchall()
        head = b""
        for row in rows:
            document = hashed_document(
                session_id=session, seq=row[0], event_id=str(row[1]), kind=row[2],
                source=row[3], cause=row[4], payload=row[5], schema_version=row[6],
                created_at=row[7],
            )  # fmt: skip
            head = chain_hash(head, document)
            attacker.execute(
                "UPDATE events SET hash = %s WHERE session_id = %s AND seq = %s",
                (head, session, row[0]),
            )
        attacker.execute(
            "UPDATE sessions SET last_hash = %s, last_seq = %s WHERE id = %s",
            (head, len(rows), session),
        )
