"""The public event store: append, read, subscribe, verify, checkpoints.

Usage::

    async with await EventStore.open(dsn, masker=masker) as store:
        recorded = await store.append(session_id, [Message(content="hi")], expected_seq=0)
        async for event in store.subscribe(session_id): ...
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Self, TypeVar
from uuid import UUID

import asyncpg
import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from app.events.found_secrets import FoundSecrets
from app.events.masking import SecretMasker, url_secrets
from app.events.stored_form import restore, tagged
from app.store.announcer import Announcer
from app.store.append import (
    EncodedBatch,
    EventLike,
    PromptMessages,
    encode_batch,
    recorded_from_result,
    translate_error,
)
from app.store.blobs import holds_encoded, put_blobs, restore_events
from app.store.coalescer import AppendCoalescer, AppendRefused, CoalescerStats
from app.store.collector_pause import collector_paused
from app.store.config import StoreConfig
from app.store.errors import (
    ContentMismatchError,
    DatabaseUnavailableError,
    DuplicateEventError,
    StoreError,
)
from app.store.integrity.anchors import AnchorRecord
from app.store.integrity.verification import verify_session
from app.store.masked_secrets import CHANNEL as MASKED_SECRETS_CHANNEL
from app.store.masked_secrets import MaskedSecret, MaskedSecrets
from app.store.notifier import Notifier
from app.store.read_replicas import (
    HEADS_SQL,
    HORIZON_SQL,
    ReadReplicas,
    Replica,
    ReplicaStats,
    global_read_whole,
    sessions_behind,
)
from app.store.records import Position, RecordedEvent, VerifyReport
from app.store.subscriptions import PAGE_SIZE, GlobalSubscription, SessionSubscription
from app.store.tail_reads import TailPage, TailReads
from app.store.transient import TRANSIENT_ERRORS
from app.store.urls import asyncpg_dsn, redact

T = TypeVar("T")

#: The columns of ``events`` a ``RecordedEvent`` is read from, in its order.
EVENT_COLUMNS = (
    "global_position, session_id, seq, event_id, tx, kind, source, cause, payload, "
    "schema_version, created_at, hash"
)
#: A session's months: ``events`` is partitioned by month of ``created_at``, and the head
#: holds the least ``created_at`` of the session's events, so PostgreSQL reads only the months
#: from it on (pruned when the query runs; same snapshot, so an event is never left out). A
#: session without a head (deleted behind the log's back) is read in every month.
SESSION_MONTHS = (
    "created_at >= coalesce((SELECT h.first_event_at FROM sessions h WHERE h.id = {session}),"
    " '-infinity')"
)


def session_months(session: str, alias: str = "") -> str:
    """The condition that keeps a query of one session's events to its months (see
    ``SESSION_MONTHS``): ``session`` is the SQL of its id (``$1``, ``s.session_id``), ``alias``
    the events' alias (``e``), if any. Correct without it; without it every month is read."""
    prefix = f"{alias}." if alias else ""
    return prefix + SESSION_MONTHS.format(session=session)


READ_SESSION_SQL = (
    f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = $1 AND seq > $2"
    f" AND {session_months('$1')} ORDER BY seq LIMIT $3"
)
#: The same with top-level payload fields ($4) left out by the server: a reader that does not
#: need a long field (an llm.call's prompt hashes) does not fetch and decode it.
READ_SESSION_WITHOUT_SQL = (
    f"SELECT {EVENT_COLUMNS.replace('payload,', 'payload - $4::text[] AS payload,')} FROM events"
    f" WHERE session_id = $1 AND seq > $2 AND {session_months('$1')}"
    " ORDER BY seq LIMIT $3"
)
#: Every month, whatever the head says: what verify reads (a changed head hides nothing).
READ_EVERY_MONTH_SQL = (
    f"SELECT {EVENT_COLUMNS} FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
)
#: Several sessions' tails in one query: the events after each cursor, a page at most each.
READ_TAILS_SQL = f"""
SELECT tail.* FROM unnest($1::uuid[], $2::bigint[]) AS cursor (session_id, after_seq)
CROSS JOIN LATERAL (
    SELECT {EVENT_COLUMNS} FROM events
    WHERE events.session_id = cursor.session_id AND events.seq > cursor.after_seq
      AND {session_months("cursor.session_id", "events")}
    ORDER BY events.seq LIMIT $3
) AS tail
"""
#: By event id: ``event_ids`` names each event's session and seq (the key across months).
READ_BY_IDS_SQL = f"""
SELECT {EVENT_COLUMNS} FROM events
WHERE (session_id, seq) IN (SELECT k.session_id, k.seq FROM event_ids k
                            WHERE k.event_id = ANY($1::uuid[]))
ORDER BY seq
"""
# Only rows of transactions older than every running one: nothing can commit behind them.
READ_ALL_SQL = f"""
SELECT {EVENT_COLUMNS} FROM events
WHERE (tx, global_position) > ($1::xid8, $2::bigint)
  AND tx < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY tx, global_position
LIMIT $3
"""
#: Messages are stored before the events that name them (an ``llm.call``), and that append
#: commits synchronously: its WAL flush covers every earlier commit, these included. So this
#: commit need not wait for a flush of its own, which was a second fsync on each agent step's
#: path; after a crash before that append, the messages lost are ones nothing names.
PUT_MESSAGES_SQL = (
    "SELECT chronicle_put_messages($1::bytea[], $2::text[]),"
    " set_config('synchronous_commit', 'off', true)"
)
READ_MESSAGES_SQL = (
    "SELECT encode(hash, 'hex') AS key, message FROM llm_messages WHERE hash = ANY($1::bytea[])"
)
SAVE_CHECKPOINT_SQL = """
INSERT INTO checkpoints (name, tx, global_position, updated_at) VALUES ($1, $2, $3, now())
ON CONFLICT (name) DO UPDATE
SET tx = excluded.tx, global_position = excluded.global_position, updated_at = now()
"""
RETRY_DELAYS = (0.05, 0.2, 0.5, 1.0)


def _decode_json(text: str) -> Any:
    """jsonb as stored; a value whose text holds escapes or blob references comes tagged
    (app/events/stored_form.py), so readers restore only those."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:  # integers beyond 64 bits
        value = json.loads(text)
    if '"$' in text:  # the first half of holds_markers, inline: this runs for every row
        return tagged(value, text)
    return value


async def _no_url() -> asyncpg.Connection:
    raise StoreError("this store was opened without a URL; use EventStore.open")


async def _keep_session(connection: asyncpg.Connection) -> None:
    """Release hook: nothing to reset (the pool already rolls back an open transaction).

    The store's connections never LISTEN, SET, or take session-level advisory locks, so
    asyncpg's default reset query would be a wasted round trip on every append and read.
    """


async def _replica_pool(url: str, config: StoreConfig, settings: dict[str, str]) -> asyncpg.Pool:
    """A standby's pool, opened without a connection: the first read makes one."""
    return await asyncpg.create_pool(
        url,
        min_size=0,
        max_size=config.pool_max_size,
        init=_init_connection,
        reset=_keep_session,
        server_settings=settings,
    )


async def _init_connection(connection: asyncpg.Connection) -> None:
    await connection.set_type_codec(
        "jsonb", encoder=json.dumps, decoder=_decode_json, schema="pg_catalog"
    )


class EventStore:
    """Owns a connection pool and one listening connection. Open with ``EventStore.open``."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        notifier: Notifier,
        config: StoreConfig,
        masker: SecretMasker,
        connect: Callable[[], Awaitable[asyncpg.Connection]] | None = None,
        replicas: ReadReplicas | None = None,
        masked: MaskedSecrets | None = None,
    ) -> None:
        #: The primary's pool: every write, and every read no standby serves.
        self.pool = pool
        self.notifier = notifier
        self.config = config
        #: Every appended payload passes through it: known secrets never enter the log.
        self.masker = masker
        self._announcer = Announcer(notifier.notify)
        self._connect = connect
        self._coalescer = AppendCoalescer(connect or _no_url)
        self._tail_reads = TailReads(self._read_tails, PAGE_SIZE)
        #: Standbys the log's reads may go to (app/store/read_replicas.py); empty: none.
        self._replicas = replicas or ReadReplicas([])
        #: Keeps what ``masker`` knows of the secrets found after the fact up to date.
        self._masked = masked

    @classmethod
    async def open(
        cls,
        dsn: str,
        *,
        masker: SecretMasker,
        config: StoreConfig | None = None,
        read_dsns: Sequence[str] = (),
    ) -> Self:
        """Connect. ``masker`` knows the deployment's secrets (``Settings.masker()``); it has
        no default, since a store that forgot them would record them. The password of ``dsn``
        is masked too.

        ``dsn`` may list several hosts with ``target_session_attrs=read-write``: a new
        connection finds whichever of them takes writes, so after a failover the store goes on
        against the promoted standby. ``read_dsns``: hot standbys the log's reads may go to,
        each read checked against the primary (app/store/read_replicas.py)."""
        config = config or StoreConfig()
        url = asyncpg_dsn(dsn)
        masker = masker.with_secrets(url_secrets("database", url))
        for read_dsn in read_dsns:
            masker = masker.with_secrets(url_secrets("database", asyncpg_dsn(read_dsn)))
        # Sent when each connection starts: it outranks the role's default (migration 0017).
        settings = {"statement_timeout": str(int(config.statement_timeout * 1000))}
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=config.pool_min_size,
                max_size=config.pool_max_size,
                init=_init_connection,
                reset=_keep_session,
                server_settings=settings,
            )
        except (*TRANSIENT_ERRORS, asyncpg.InvalidCatalogNameError) as exc:
            raise DatabaseUnavailableError(
                f"cannot connect to PostgreSQL at {redact(url)}: {exc}. Is the server running "
                "and the URL (CHRONICLE_DATABASE_URL) right?"
            ) from None
        replicas = ReadReplicas(
            [
                # none opened until a read wants one: a standby that is down at the start
                # only rests, it does not keep the store from opening
                Replica(redact(read_url), await _replica_pool(read_url, config, settings))
                for read_url in map(asyncpg_dsn, read_dsns)
            ]
        )
        try:
            if await pool.fetchval("SELECT to_regclass('events')") is None:
                raise StoreError(
                    f"the database at {redact(url)} has no Chronicle schema; "
                    "run `chronicle db migrate`"
                )
            notifier = Notifier(lambda: asyncpg.connect(url), keepalive=config.poll_interval)
            masked = MaskedSecrets(pool, FoundSecrets())
            notifier.listen_also(MASKED_SECRETS_CHANNEL, masked.ring)
            await notifier.start()
        except BaseException:
            await pool.close()
            await replicas.close()
            raise
        try:  # after the LISTEN: a secret added from now on rings
            await masked.load()
        except BaseException:
            await notifier.close()
            await pool.close()
            await replicas.close()
            raise
        store = cls(
            pool,
            notifier,
            config,
            masker.with_found(masked.found),
            connect=lambda: asyncpg.connect(url, server_settings=settings),
            replicas=replicas,
            masked=masked,
        )
        masked.start()
        # Its appends ring its watchers themselves (append_encoded); their NOTIFYs are for
        # other processes. Here, not in __init__: a BufferedSession shares this notifier and
        # writes through this store.
        notifier.ignore_senders(store._coalescer.backend_pids)
        return store

    async def connect(self) -> asyncpg.Connection:
        """A connection of its own, outside the pool and set up like the pool's, for work that
        holds a session-level lock for as long as it runs (a projection runner: its lock and
        its writes share the connection, so they end together). The caller closes it."""
        if self._connect is None:
            raise StoreError("this store was opened without a URL; use EventStore.open")
        connection = await self._retrying(self._connect)
        await _init_connection(connection)
        return connection

    async def close(self) -> None:
        if self._masked is not None:
            await self._masked.close()
        await self._announcer.close()
        await self._coalescer.close()
        await self.notifier.close()
        await self.pool.close()
        await self._replicas.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _retrying(self, operation: Callable[[], Awaitable[T]]) -> T:
        """Run an idempotent operation, retrying briefly through a lost connection."""
        for delay in RETRY_DELAYS:
            try:
                return await operation()
            except TRANSIENT_ERRORS:
                await asyncio.sleep(delay)
        try:
            return await operation()
        except TRANSIENT_ERRORS as exc:
            raise DatabaseUnavailableError(f"PostgreSQL is unavailable: {exc}") from exc

    # -- writing ---------------------------------------------------------------------------

    async def append(
        self,
        session_id: UUID,
        events: Iterable[EventLike],
        *,
        expected_seq: int | None = None,
        messages: Mapping[str, str] | None = None,
    ) -> list[RecordedEvent]:
        """Record ``events`` atomically at the end of the session's stream.

        ``expected_seq`` is the last seq the writer saw (0 for a new session; None skips the
        check); a mismatch raises ``ConcurrencyError`` with ``actual_seq``. Re-sending a batch
        (same event_ids) returns the recorded events and writes nothing, which also makes a
        retry after a lost connection safe.

        ``messages`` (sha256 hex -> canonical JSON text, as ``put_messages`` takes them) are
        stored in the same transaction and round trip: an ``llm.call`` and the prompt
        messages it names are recorded together or not at all.
        """
        batch = encode_batch(
            events,
            self.config.max_event_bytes,
            self.masker,
            blob_threshold=self.config.blob_threshold_bytes,
        )
        return await self.append_encoded(
            session_id, batch, expected_seq=expected_seq, messages=messages
        )

    async def append_encoded(
        self,
        session_id: UUID,
        batch: EncodedBatch,
        *,
        expected_seq: int | None = None,
        messages: Mapping[str, str] | None = None,
    ) -> list[RecordedEvent]:
        """``append`` of a batch ``encode_batch`` made with this store's settings (for a
        writer that needed the encoded events before they were written)."""
        if not batch.event_ids:
            return []
        stored = PromptMessages.of(messages or {})
        if batch.blobs:  # before the events that refer to them
            await self.put_blobs(batch.blobs)
        try:
            result = await self._retrying(
                lambda: self._coalescer.append(session_id, expected_seq, batch, stored)
            )
        except AppendRefused as exc:
            # A re-sent batch trips over its own recorded seq or event_ids: find out here,
            # off the hot path, rather than looking every event_id up on every append.
            if exc.sqlstate in ("CR001", "23505"):
                already = await self._already_recorded(session_id, batch.event_ids)
                if already is not None:
                    self.notifier.announce(str(session_id), already[-1].seq, already)
                    return already
            raise translate_error(exc, session_id, expected_seq) from None
        except BaseException:
            # It may have committed, its answer lost: our watchers look for themselves.
            self.notifier.recheck(str(session_id))
            raise
        recorded = recorded_from_result(session_id, batch, result.rows)
        last_seq = recorded[-1].seq
        self.notifier.announce(str(session_id), last_seq, recorded)  # ours: now, no read
        if not result.notified:
            self._announcer.announce(str(session_id), last_seq)  # everyone else: NOTIFY
        return recorded

    async def _already_recorded(
        self, session_id: UUID, event_ids: list[UUID]
    ) -> list[RecordedEvent] | None:
        """The recorded events if this exact batch is already in the session, else None."""
        found = await self._retrying(lambda: self._fetch(READ_BY_IDS_SQL, event_ids))
        if not found:
            return None
        elsewhere = [e for e in found if e.session_id != session_id]
        if elsewhere:
            raise DuplicateEventError(
                f"event_id {elsewhere[0].event_id} is already recorded in session "
                f"{elsewhere[0].session_id}"
            )
        if len(found) != len(event_ids):
            raise DuplicateEventError(
                f"{len(found)} of the batch's {len(event_ids)} event_ids are already recorded: "
                "a batch must be re-sent whole, or with new event_ids"
            )
        return found

    async def put_messages(self, hashes: Sequence[str], texts: Sequence[str]) -> int:
        """Store prompt messages once each, keyed by content hash; the number newly stored.

        ``hashes[i]`` is the sha256 hex of ``texts[i]``, a message's canonical JSON. The
        database checks every pair and refuses the whole call (``ContentMismatchError``) if
        one does not match, so a stored message always re-hashes to its key.
        """
        try:
            keys = [bytes.fromhex(key) for key in hashes]
        except ValueError:
            raise ContentMismatchError("a message key is not a sha256 hex digest") from None
        try:
            inserted = await self._retrying(
                lambda: self.pool.fetchval(PUT_MESSAGES_SQL, keys, list(texts))
            )
        except asyncpg.PostgresError as exc:
            raise translate_error(exc, None, None) from None
        return int(inserted or 0)

    async def read_messages(self, hashes: Sequence[str]) -> dict[str, Any]:
        """Stored prompt messages (and tool lists) by sha256 hex: what a model was sent, as an
        ``llm.call``'s ``prompt`` and ``tools`` name them. Keys not stored are left out."""
        try:
            keys = [bytes.fromhex(key) for key in hashes]
        except ValueError:
            raise ContentMismatchError("a message key is not a sha256 hex digest") from None
        rows = await self._retrying(lambda: self.pool.fetch(READ_MESSAGES_SQL, keys))
        return {row["key"]: restore(row["message"], {}) for row in rows}

    async def put_blobs(self, blobs: Mapping[str, str]) -> int:
        """Store texts once each under their sha256 hex (the database checks every key); the
        number newly stored. ``append`` does this for the long strings of its payloads."""
        try:
            return await self._retrying(lambda: put_blobs(self.pool, blobs))
        except ValueError:
            raise ContentMismatchError("a blob key is not a sha256 hex digest") from None
        except asyncpg.PostgresError as exc:
            raise translate_error(exc, None, None) from None

    @property
    def append_stats(self) -> CoalescerStats:
        """Append calls sent to the database and the appends they carried."""
        return self._coalescer.stats

    # -- reading ---------------------------------------------------------------------------

    async def _fetch(
        self,
        sql: str,
        *args: Any,
        resolve_blobs: bool = True,
        pool: asyncpg.Pool | None = None,
    ) -> list[RecordedEvent]:
        """Events read on ``pool`` (the primary's by default), their blobs from the same
        server: a standby that has an event has its blobs, which were committed before it."""
        pool = pool or self.pool
        with collector_paused():  # rows are decoded as they arrive: see collector_pause.py
            rows = await pool.fetch(sql, *args)
            make = RecordedEvent._make  # columns are selected in the tuple's field order
            events = [make(row) for row in rows]
        if resolve_blobs and events and holds_encoded(events):
            return await restore_events(pool, events)
        return events

    @property
    def replica_stats(self) -> ReplicaStats:
        """How reads were served: by a standby, or by the primary when one was behind."""
        return self._replicas.stats

    async def _read_sessions(
        self,
        sql: str,
        args: Sequence[Any],
        cursors: Mapping[UUID, int],
        limit: int | None,
        resolve_blobs: bool,
    ) -> list[RecordedEvent]:
        """Sessions' events after their cursors (``sql`` with ``args`` reads them): on a
        standby when one is set and has every event the primary's heads say there is (see
        app/store/read_replicas.py), on the primary otherwise."""
        replica = self._replicas.choose()
        if replica is None:
            return await self._fetch(sql, *args, resolve_blobs=resolve_blobs)
        heads = {row[0]: row[1] for row in await self.pool.fetch(HEADS_SQL, list(cursors))}
        try:
            events = await self._fetch(sql, *args, resolve_blobs=resolve_blobs, pool=replica.pool)
        except (*TRANSIENT_ERRORS, asyncpg.PostgresError):
            self._replicas.failed(replica)
            return await self._fetch(sql, *args, resolve_blobs=resolve_blobs)
        behind = sessions_behind(cursors, heads, events, limit)
        if not behind:
            self._replicas.stats.served += 1
            return events
        self._replicas.stats.behind += len(behind)
        if len(behind) == len(cursors):
            return await self._fetch(sql, *args, resolve_blobs=resolve_blobs)
        kept = [event for event in events if event.session_id not in behind]
        again = await self._fetch(
            READ_TAILS_SQL,
            list(behind),
            [cursors[session_id] for session_id in behind],
            limit,
            resolve_blobs=resolve_blobs,
        )
        return kept + again

    async def read(
        self,
        session_id: UUID,
        after_seq: int = 0,
        limit: int | None = None,
        *,
        resolve_blobs: bool = True,
        leave_out: Sequence[str] = (),
        trust_head: bool = True,
    ) -> list[RecordedEvent]:
        """The session's events with ``seq > after_seq``, in order.

        Payloads are whole: escaped text restored, blob references replaced by their text
        (one query for the blobs of the whole read). ``resolve_blobs=False`` gives each
        payload as the table stores it (blob references ``{"$blob": ..., "chars": N}`` and
        escapes included, see app/events/stored_form.py) without fetching any blob.
        ``leave_out``: top-level payload fields not read at all (such events no longer match
        their hash: for readers that map them, never for verification).
        ``trust_head=False`` reads every month of ``events``, not only those from the head's
        first event time on (verify: a head changed behind the log's back hides nothing).
        """
        sql, fields = READ_SESSION_SQL, []
        if leave_out:
            sql, fields = READ_SESSION_WITHOUT_SQL, [list(leave_out)]
        elif not trust_head:
            sql = READ_EVERY_MONTH_SQL
        args = (session_id, after_seq, limit, *fields)
        return await self._retrying(
            lambda: self._read_sessions(sql, args, {session_id: after_seq}, limit, resolve_blobs)
        )

    async def read_tail(self, session_id: UUID, after_seq: int, *, resolve_blobs: bool) -> TailPage:
        """A page of the session's events after ``after_seq``, read in one query with the
        other tails this process's subscriptions want at the same time (see
        app/store/tail_reads.py). Subscriptions read through it; ``read`` reads alone."""
        return await self._tail_reads.read(session_id, after_seq, resolve_blobs=resolve_blobs)

    async def _read_tails(
        self, cursors: Mapping[UUID, int], limit: int, resolve_blobs: bool
    ) -> list[RecordedEvent]:
        if len(cursors) == 1:
            [(session_id, after_seq)] = cursors.items()
            return await self.read(session_id, after_seq, limit, resolve_blobs=resolve_blobs)
        args = (list(cursors), list(cursors.values()), limit)
        return await self._retrying(
            lambda: self._read_sessions(READ_TAILS_SQL, args, cursors, limit, resolve_blobs)
        )

    async def read_all(
        self, after: Position | None = None, limit: int = 1000, *, resolve_blobs: bool = True
    ) -> list[RecordedEvent]:
        """Events of all sessions after ``after`` in commit-safe ``(tx, global_position)`` order
        (payloads as ``read`` gives them)."""
        position = after or Position.origin()
        args = (position.tx, position.global_position, limit)
        return await self._retrying(lambda: self._read_all(args, limit, resolve_blobs))

    async def _read_all(
        self, args: Sequence[Any], limit: int, resolve_blobs: bool
    ) -> list[RecordedEvent]:
        """The global read on a standby when it has all the primary had at the start (its
        horizon reached the primary's) or a full page; on the primary otherwise."""
        replica = self._replicas.choose()
        if replica is None:
            return await self._fetch(READ_ALL_SQL, *args, resolve_blobs=resolve_blobs)
        horizon = await self.pool.fetchval(HORIZON_SQL)
        try:
            # the standby's horizon before its read: the read's own is no lower
            reached = await replica.pool.fetchval(HORIZON_SQL)
            events = await self._fetch(
                READ_ALL_SQL, *args, resolve_blobs=resolve_blobs, pool=replica.pool
            )
        except (*TRANSIENT_ERRORS, asyncpg.PostgresError):
            self._replicas.failed(replica)
            return await self._fetch(READ_ALL_SQL, *args, resolve_blobs=resolve_blobs)
        if global_read_whole(horizon, reached, len(events), limit):
            self._replicas.stats.served += 1
            return events
        self._replicas.stats.behind += 1
        return await self._fetch(READ_ALL_SQL, *args, resolve_blobs=resolve_blobs)

    async def last_seq(self, session_id: UUID) -> int:
        """The session's last seq (0 if it has no events)."""
        value = await self._retrying(
            lambda: self.pool.fetchval("SELECT last_seq FROM sessions WHERE id = $1", session_id)
        )
        return int(value or 0)

    def subscribe(
        self, session_id: UUID, after_seq: int = 0, *, resolve_blobs: bool = True
    ) -> SessionSubscription:
        """Live tail of one session: every event after ``after_seq`` once, in order, forever
        (payloads as ``read`` gives them)."""
        return SessionSubscription(
            self,
            session_id,
            after_seq,
            resolve_blobs=resolve_blobs,
            poll_interval=self.config.poll_interval,
        )

    def subscribe_all(
        self,
        name: str | None = None,
        *,
        start: Position | None = None,
        auto_checkpoint: bool = True,
        resolve_blobs: bool = True,
    ) -> GlobalSubscription:
        """Live tail of every session; with ``name``, resumes from a durable checkpoint
        (payloads as ``read`` gives them)."""
        return GlobalSubscription(
            self,
            name,
            start,
            auto_checkpoint,
            resolve_blobs=resolve_blobs,
            poll_interval=self.config.poll_interval,
        )

    # -- checkpoints -----------------------------------------------------------------------

    async def load_checkpoint(self, name: str) -> Position | None:
        row = await self._retrying(
            lambda: self.pool.fetchrow(
                "SELECT tx, global_position FROM checkpoints WHERE name = $1", name
            )
        )
        return Position(row["tx"], row["global_position"]) if row else None

    async def save_checkpoint(
        self, name: str, position: Position, connection: asyncpg.Connection | None = None
    ) -> None:
        """Save a consumer's position; pass its ``connection`` to save inside its transaction."""
        if connection is not None:
            await connection.execute(SAVE_CHECKPOINT_SQL, name, *position)
            return
        await self._retrying(lambda: self.pool.execute(SAVE_CHECKPOINT_SQL, name, *position))

    # -- integrity -------------------------------------------------------------------------

    async def redact(
        self,
        session_id: UUID,
        seq: int,
        path: str = "",
        *,
        reason: str,
        user: str,
        whole_if_needed: bool = False,
    ) -> list[RecordedEvent]:
        """Remove the part at ``path`` (a JSON Pointer; "" the whole payload) of the
        session's event ``seq``, and the blobs and prompt messages it named wherever they are
        named; the ``redaction`` events recorded, this one first (``app.store.redaction``).
        ``whole_if_needed``: an event recorded before migration 0029 loses its whole payload
        (else a part of it is refused)."""
        from app.store.redaction import redact

        return await redact(
            self,
            session_id,
            seq,
            path,
            reason=reason,
            user=user,
            whole_if_needed=whole_if_needed,
        )

    async def mask_found_secret(self, value: str, *, user: str, reason: str) -> MaskedSecret:
        """Have every process that records replace ``value`` from now on, keeping only its
        keyed hash (``app.store.masked_secrets``); ``NotMaskableError`` when it is too short
        or plain to recognise safely."""
        if self._masked is None:
            raise StoreError("this store was opened without a URL; use EventStore.open")
        return await self._masked.add(value, user=user, reason=reason)

    async def redact_matching(
        self,
        session_id: UUID,
        seq: int,
        matches: Any,
        *,
        reason: str,
        user: str,
        whole_if_needed: bool = False,
    ) -> list[RecordedEvent]:
        """Redact each part of event ``seq`` for which ``matches(stored node)`` holds (a
        string equal to a name, say), with what each part names; the records made."""
        from app.store.redaction import redact_where

        return await redact_where(
            self,
            session_id,
            seq,
            matches,
            reason=reason,
            user=user,
            whole_if_needed=whole_if_needed,
        )

    async def verify(
        self,
        session_id: UUID,
        page_size: int = 5000,
        *,
        anchors: Sequence[AnchorRecord] = (),
        trusted: Ed25519PublicKey | None = None,
    ) -> VerifyReport:
        """Check the session's hash chain, its sessions row and its prompt messages, and with
        ``anchors`` (signed heads) that they are still there and signed by ``trusted``; the
        report names the first problem (see app/store/integrity/verification.py)."""
        return await verify_session(
            self, session_id, anchors=anchors, trusted=trusted, page_size=page_size
        )
