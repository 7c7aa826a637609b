"""The append functions refuse what ``verify`` would call broken, whoever calls them.

Before migration 0014 a login in chronicle_app could call ``chronicle_append_one`` with a kind
the protocol does not know, or with payload text that is not canonical JSON (keys out of
order, spaces, an escaped letter, ``1.0``): the chain covered the text as sent, the table kept
the jsonb, and the session failed ``verify`` for ever. Now each is refused (CR014) before the
session's lock is taken, and the session still verifies.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import asyncpg
import pytest

from app.events import EvalScore, Message
from app.events.canonical import canonical_json, stored_json
from app.events.registry import EVENT_TYPES
from app.store import EventStore
from app.store.event_store import _decode_json

APPEND_ONE = "SELECT * FROM chronicle_append_one($1, $2, $3, $4, 'user', NULL, $5, 1::smallint)"
APPEND = (
    "SELECT * FROM chronicle_append($1, $2, $3::uuid[], $4::text[], $5::text[], $6::integer[], "
    "$7::text[], $8::smallint[])"
)
APPEND_MANY = (
    "SELECT * FROM chronicle_append_many(ARRAY[$1]::uuid[], ARRAY[$2]::integer[], "
    "ARRAY[1], ARRAY[$3]::uuid[], ARRAY[$4]::text[], ARRAY['user'], ARRAY[NULL]::integer[], "
    "ARRAY[$5]::text[], ARRAY[1]::smallint[])"
)

#: A message payload as canonical JSON writes it, then as an attacker might send it instead.
CANONICAL = canonical_json({"content": "hi", "sender": "ann"})
NOT_CANONICAL = {
    "keys out of order": '{"sender":"ann","content":"hi"}',
    "spaces": '{"content": "hi", "sender": "ann"}',
    "a trailing newline": CANONICAL + "\n",
    "an escaped letter": '{"content":"\\u0068i","sender":"ann"}',
    "an escaped slash": '{"content":"h\\/i","sender":"ann"}',
    "a key given twice": '{"content":"hi","content":"hi","sender":"ann"}',
    "an integral number with a fraction": '{"content":"hi","n":1.0,"sender":"ann"}',
    "a float longer than its shortest form": '{"content":"hi","n":0.10000000000000001}',
    "an exponent where repr has none": '{"content":"hi","n":1.5E2,"sender":"ann"}',
    "an integer beyond 64 bits no float is": '{"content":"hi","n":123456789012345678901234567}',
    "not an object": '["content","hi"]',
}


async def test_the_databases_kinds_are_the_registrys(superuser: asyncpg.Connection) -> None:
    """One list of kinds: a kind added to app/events needs a migration that replaces
    chronicle_event_kinds() (or every append of it is refused)."""
    kinds = await superuser.fetchval("SELECT chronicle_event_kinds()")
    assert sorted(kinds) == sorted(EVENT_TYPES), (
        "a kind's revision is missing: tests/unit/store/test_schema_kind_lists.py prints it"
    )


async def _started(store: EventStore) -> uuid.UUID:
    session = uuid.uuid4()
    await store.append(session, [Message(content="first")])
    return session


async def _still_verifies(store: EventStore, session: uuid.UUID) -> None:
    report = await store.verify(session)
    assert report.ok and report.checked == 1, report.reason


@pytest.mark.parametrize("text", NOT_CANONICAL.values(), ids=NOT_CANONICAL.keys())
async def test_a_payload_text_verify_would_not_hash_alike_is_refused(
    store: EventStore, app_login: asyncpg.Connection, text: str
) -> None:
    session = await _started(store)
    with pytest.raises(asyncpg.PostgresError) as raised:
        await app_login.fetchrow(APPEND_ONE, session, 1, uuid.uuid4(), "message", text)
    assert raised.value.sqlstate == "CR014", raised.value
    await _still_verifies(store, session)


async def test_an_unknown_kind_is_refused(store: EventStore, app_login: asyncpg.Connection) -> None:
    session = await _started(store)
    with pytest.raises(asyncpg.PostgresError, match="bogus, which the protocol does not know"):
        await app_login.fetchrow(APPEND_ONE, session, 1, uuid.uuid4(), "bogus", CANONICAL)
    await _still_verifies(store, session)


async def test_batches_are_checked_event_by_event(
    store: EventStore, app_login: asyncpg.Connection
) -> None:
    session = await _started(store)
    ids = [uuid.uuid4(), uuid.uuid4()]
    with pytest.raises(asyncpg.PostgresError, match="event 2 has a payload text") as raised:
        await app_login.fetch(
            APPEND, session, 1, ids, ["message", "message"], ["user", "user"], [None, None],
            [CANONICAL, NOT_CANONICAL["spaces"]], [1, 1],
        )  # fmt: skip
    assert raised.value.sqlstate == "CR014"
    rows = await app_login.fetch(
        APPEND_MANY, session, 1, uuid.uuid4(), "bogus", CANONICAL
    )  # group commit reports a refused group in its row
    assert [row["error_state"] for row in rows] == ["CR014"]
    await _still_verifies(store, session)


async def test_what_the_store_appends_is_accepted_as_it_always_was(store: EventStore) -> None:
    session = uuid.uuid4()
    await store.append(
        session,
        [
            Message(content='ä \u2028 \x7f 😀 "quoted" \\ \n\t\x01'),
            *(
                EvalScore(name="cost", scorer_version=1, score_value=value, scored_seq=1)
                for value in (0.1, 1e-7, 1e15 + 0.5, 3.0, 2.0**70, -2.5e-300)
            ),
        ],
    )
    assert (await store.verify(session)).ok


def _value(rnd: random.Random, depth: int = 0) -> Any:
    pick = rnd.random()
    if depth < 3 and pick < 0.25:
        return {_text(rnd): _value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}
    if depth < 3 and pick < 0.4:
        return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    if pick < 0.6:
        scale = 10.0 ** rnd.randint(-320, 300)
        return rnd.choice([rnd.uniform(-1, 1) * scale, 1e15 + 0.5, 5e-324, 2.0**70, 0.1])
    if pick < 0.7:
        return rnd.choice([rnd.randint(-(10**25), 10**25), 2**63, -(2**63) - 1, 2**64])
    if pick < 0.75:
        return rnd.choice([True, False, None])
    return _text(rnd)


def _text(rnd: random.Random) -> str:
    points = (1, 0x1F, 0x7F, 0x2028, 0xFEFF, 0x1F600, 0x10FFFF)
    return "".join(
        chr(rnd.choice([rnd.randint(1, 0x7E), rnd.choice(points), rnd.randint(0x80, 0xD7FF)]))
        for _ in range(rnd.randint(0, 6))
    )


async def test_the_database_accepts_exactly_the_texts_verify_hashes_alike(
    superuser: asyncpg.Connection,
) -> None:
    """For canonical texts and their non-canonical twins (spaces, unsorted keys, ASCII
    escapes): the database's rendering equals the text exactly when verify, reading the stored
    value back, would hash the same text (floats of every magnitude, integers beyond 64 bits,
    escapes, astral characters, key order by code point)."""
    rnd = random.Random(22)
    checked = 0
    for _ in range(400):
        text = canonical_json({"v": _value(rnd)})
        value = json.loads(text)
        for candidate in (
            text,
            json.dumps(value, ensure_ascii=False),
            json.dumps(value, separators=(",", ":"), ensure_ascii=False),
            json.dumps(value, separators=(",", ":"), ensure_ascii=True, sort_keys=True),
        ):
            row = await superuser.fetchrow(
                "SELECT chronicle_canonical_json($1::jsonb) AS rendered, $1::jsonb::text AS stored",
                candidate,
            )
            try:
                verified = stored_json(_decode_json(row["stored"])) == candidate
            except ValueError:
                verified = False
            assert (row["rendered"] == candidate) == verified, candidate
            checked += 1
    assert checked == 1600
