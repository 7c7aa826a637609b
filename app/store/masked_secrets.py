"""The masker learns a secret found after the fact, and every recording process learns it too
(issue 29; docs/erasure.md, "The masker learns a found secret").

``chronicle redact --value-file`` hands the store the secret it found (``add``). The store
keeps only HMAC-SHA256 of its core (app/events/found_secrets.py) under the deployment's one
random key, made on first use (``masker_key``), in ``masked_secrets`` with its number of
tokens, who added it and why; then it sends a ``NOTIFY`` on ``CHANNEL`` in the same
transaction (delivered at commit).

Every ``EventStore`` loads the key and the digests when it opens, before it records anything,
into the ``FoundSecrets`` its masker shares (``MaskedSecrets``). It loads them again when the
notifier hears ``CHANNEL`` (its listening connection LISTENs on it always), after that
connection is re-established (a notification may have been lost meanwhile), and every
``RECHECK_SECONDS`` as a safety net. So a process that records learns a new secret a round
trip after the command commits it; while its listening connection is down, within a couple of
seconds of its reconnecting, and in any case within ``RECHECK_SECONDS``. What it encodes in
that window is recorded unmasked, and only the search of ``redact --value-file`` (which runs
after the secret is added) or a later one finds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import NamedTuple

import asyncpg

from app.events.found_secrets import FoundSecrets, found_digest, found_name, secret_core
from app.events.masking import placeholder
from app.store.transient import TRANSIENT_ERRORS

log = logging.getLogger(__name__)

CHANNEL = "chronicle_masked_secrets"
#: Seconds between re-reads of ``masked_secrets`` when no notification came (a safety net).
RECHECK_SECONDS = 30.0

LOAD_SQL = """
SELECT (SELECT key FROM masker_key) AS key,
       coalesce(array_agg(digest), '{}') AS digests,
       coalesce(array_agg(tokens), '{}') AS tokens
FROM masked_secrets
"""
MAKE_KEY_SQL = "INSERT INTO masker_key (key) VALUES ($1) ON CONFLICT DO NOTHING"
KEY_SQL = "SELECT key FROM masker_key"
ADD_SQL = """
INSERT INTO masked_secrets (digest, tokens, added_by, reason) VALUES ($1, $2, $3, $4)
ON CONFLICT (digest) DO NOTHING RETURNING added_at
"""
NOTIFY_SQL = f"SELECT pg_notify('{CHANNEL}', '')"


class MaskedSecret(NamedTuple):
    """A found secret the masker knows: how it shows (``[secret found 1a2b3c4d]``), how many
    tokens it spans, and whether this call added it (False: it was known already)."""

    name: str
    tokens: int
    added: bool


class MaskedSecrets:
    """Keeps a ``FoundSecrets`` equal to the database's ``masked_secrets`` (see the module)."""

    def __init__(
        self, pool: asyncpg.Pool, found: FoundSecrets, *, recheck: float = RECHECK_SECONDS
    ) -> None:
        self._pool = pool
        self.found = found
        self._recheck = recheck
        self._ring = asyncio.Event()
        #: One read at a time: a slow read must not undo what a later one learned.
        self._reading = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        #: How many times the digests were read (tests look).
        self.loads = 0

    def ring(self) -> None:
        """Read the digests again soon (the notifier calls it: a notification, a reconnect)."""
        self._ring.set()

    async def load(self) -> None:
        """Read the key and every digest, and make them what ``found`` knows."""
        async with self._reading:
            self._ring.clear()  # a ring from now on is about what this read may not see
            try:
                row = await self._pool.fetchrow(LOAD_SQL)
            except asyncpg.UndefinedTableError:  # a database before migration 0030: none yet
                return
            self.loads += 1
            self.found.learn(row["key"], dict(zip(row["digests"], row["tokens"], strict=True)))

    def start(self) -> None:
        """Follow ``masked_secrets`` in the background until ``close``."""
        self._task = asyncio.create_task(self._follow(), name="chronicle-masked-secrets")

    async def _follow(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._recheck):
                    await self._ring.wait()
            try:
                await self.load()
            except (*TRANSIENT_ERRORS, asyncpg.PostgresError) as exc:
                log.warning("could not read the masker's found secrets (%s); will retry", exc)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def add(self, value: str, *, user: str, reason: str) -> MaskedSecret:
        """Have every recording process mask ``value`` from now on, keeping only its keyed
        hash; ``NotMaskableError`` when its core is too short or plain (found_secrets.py)."""
        core = secret_core(value)
        key = await self._key()
        digest = found_digest(key, core.text)
        async with self._pool.acquire() as connection, connection.transaction():
            added = await connection.fetchval(ADD_SQL, digest, core.tokens, user, reason)
            if added is not None:
                await connection.execute(NOTIFY_SQL)  # sent when this commits
        await self.load()  # this process knows it before the call returns
        return MaskedSecret(placeholder(found_name(digest)), core.tokens, added is not None)

    async def _key(self) -> bytes:
        """The deployment's masker key, made now if this is the first secret ever added."""
        await self._pool.execute(MAKE_KEY_SQL, secrets.token_bytes(32))
        key: bytes = await self._pool.fetchval(KEY_SQL)
        return key
