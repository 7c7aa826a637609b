"""A secret found after the fact is masked from then on by every process that records, and is
kept nowhere as text: only its keyed hash is (app/store/masked_secrets.py)."""

from __future__ import annotations

import asyncio
import json
import uuid

import asyncpg
import pytest

from app.config import Settings
from app.events import Message
from app.events.found_secrets import FoundSecrets, NotMaskableError
from app.events.masking import SecretMasker
from app.llm import LlmConfig, LlmGateway
from app.store import EventStore
from app.store.masked_secrets import MaskedSecrets
from tests.support.fake_llm import FakeLlmServer, Reply
from tests.support.waiting import until

API_KEY = "sk-live-Zq8Xw3Rt5Yu7Ip9Oa1Sd"
PASSWORD = "hunter2:hunter@Two!"  # two tokens: its ':' ends one
DUMPS = {  # everything Chronicle wrote, as text
    "events": "SELECT payload::text FROM events",
    "blobs": "SELECT content FROM blobs",
    "llm_messages": "SELECT message::text FROM llm_messages",
    "masked_secrets": "SELECT masked_secrets::text FROM masked_secrets",
    "masker_key": "SELECT masker_key::text FROM masker_key",
}


def knows(store: EventStore, value: str) -> bool:
    return store.masker.mask_text(value) != value


async def test_a_found_secret_is_masked_everywhere_from_then_on_and_kept_nowhere(
    store: EventStore,
    app_database_url: str,
    superuser: asyncpg.Connection,
    settings: Settings,
    fake_llm: FakeLlmServer,
) -> None:
    async with await EventStore.open(
        app_database_url, config=settings.store, masker=settings.masker()
    ) as other:  # another process that records
        assert not knows(other, API_KEY)
        added = await store.mask_found_secret(API_KEY, user="ada", reason="pasted in a chat")
        assert added.added and added.tokens == 1 and added.name.startswith("[secret found ")
        assert knows(store, API_KEY)  # this process: before the call returned
        # the other learns it by NOTIFY: far sooner than the re-check's 30 s
        await until(lambda: knows(other, API_KEY), timeout=10, what="the other store learns")
        again = await store.mask_found_secret(f"{API_KEY}\n", user="bob", reason="again")
        assert again == added._replace(added=False)
        with pytest.raises(NotMaskableError):
            await store.mask_found_secret("  short  ", user="ada", reason="x")

        # the other's listening connection is lost: it listens again on the next one
        await superuser.execute("SELECT pg_terminate_backend($1)", other.notifier.backend_pid)
        await until(lambda: other.notifier.connections_made >= 2, timeout=10, what="reconnect")
        password = await store.mask_found_secret(PASSWORD, user="ada", reason="printed")
        assert password.tokens == 2
        await until(lambda: knows(other, PASSWORD), timeout=10, what="learned after reconnect")

        session = uuid.uuid4()
        await other.append(
            session,
            [
                Message(content=f"my key is {API_KEY}. and db password={PASSWORD}"),
                Message(content=f"{API_KEY}\n" + "x" * 70_000),  # a blob
                Message(content=f"\x00{API_KEY}"),  # an escaped string
            ],
            expected_seq=0,
        )
        fake_llm.script(Reply(content=f"Use {API_KEY} as the key."))
        gateway = LlmGateway(
            other,
            LlmConfig.model_validate(
                {"model": "openai/fake-model", "base_url": fake_llm.base_url, "api_key": "k"}
            ),
        )
        prompt = [{"role": "user", "content": f"log in with {PASSWORD} and {API_KEY}"}]
        reply = await gateway.complete(session, prompt, [])
        assert API_KEY not in reply.event.payload["response"]["content"]

    sent = json.dumps(fake_llm.requests[0]["messages"])
    assert PASSWORD not in sent and added.name in sent and password.name in sent

    recorded = [event.payload for event in await store.read(session)]
    assert recorded[0]["content"] == f"my key is {added.name}. and db password={password.name}"
    assert recorded[1]["content"].startswith(f"{added.name}\nxxx")
    assert recorded[2]["content"] == f"\x00{added.name}"
    stored = await store.read_messages(recorded[3]["prompt"])
    [message] = stored.values()
    assert message["content"] == f"log in with {password.name} and {added.name}"

    rows = await superuser.fetch("SELECT added_by, reason, tokens FROM masked_secrets")
    assert sorted(tuple(row) for row in rows) == [
        ("ada", "pasted in a chat", 1),
        ("ada", "printed", 2),
    ]
    for table, sql in DUMPS.items():
        dumped = "\n".join(str(value) for value in await superuser.fetchval(
            f"SELECT array_agg(t) FROM ({sql}) AS d (t)"
        ) or [])  # fmt: skip
        assert dumped or table == "blobs", table
        for secret in (API_KEY, PASSWORD, "hunter2", "hunter@Two"):
            assert secret not in dumped, table
            assert secret.encode().hex() not in dumped, table


async def test_the_recheck_learns_what_no_notification_said(store: EventStore) -> None:
    """The safety net: a follower that hears no notification reads the table again."""
    deaf = MaskedSecrets(store.pool, FoundSecrets(), recheck=0.2)
    await deaf.load()
    assert len(deaf.found) == 0
    deaf.start()
    try:
        masker = SecretMasker().with_found(deaf.found)
        await store.mask_found_secret(API_KEY, user="ada", reason="x")
        await until(lambda: masker.mask_text(API_KEY) != API_KEY, timeout=10, what="re-check")
        assert len(deaf.found) == 1 and deaf.loads >= 2
    finally:
        await deaf.close()
    await asyncio.sleep(0)
