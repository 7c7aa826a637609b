"""Prompt messages commit without waiting for a WAL flush of their own, and only they do.

``put_messages`` stores messages before the ``llm.call`` that names them, and that append
commits synchronously: its flush covers the WAL up to itself, earlier commits included. So the
messages' transaction sets ``synchronous_commit`` off for itself (``set_config(..., true)``).
Before, it waited for its own flush: a second fsync on every agent step's path (2.6 ms -> 0.66
ms per call at the median on a loaded machine). What could go wrong is the setting outliving
its transaction on the pooled connection, so that appends, which must be durable when they
return, stop waiting for their flush: checked here.
"""

from __future__ import annotations

import hashlib
import json
import uuid

from app.events import Message
from app.events.masking import SecretMasker
from app.store import EventStore
from app.store.config import StoreConfig


def _message(text: str) -> tuple[str, str]:
    canonical = json.dumps({"content": text, "role": "user"}, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest(), canonical


async def test_put_messages_leaves_the_pooled_connection_committing_synchronously(
    app_database_url: str,
) -> None:
    config = StoreConfig(pool_min_size=1, pool_max_size=1)
    async with await EventStore.open(
        app_database_url, config=config, masker=SecretMasker()
    ) as store:
        key, text = _message(f"hello {uuid.uuid4()}")
        assert await store.put_messages([key], [text]) == 1
        assert (await store.read_messages([key]))[key] == json.loads(text)
        # The pool's only connection: the one put_messages just used.
        assert await store.pool.fetchval("SHOW synchronous_commit") == "on"
        session = uuid.uuid4()
        await store.append(session, [Message(content="after the messages")], expected_seq=0)
        assert [e.seq for e in await store.read(session)] == [1]
