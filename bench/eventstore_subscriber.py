"""The other process of the delivery benchmark: subscribes, and notes when each event arrives.

    python bench/eventstore_subscriber.py URL

Driven by ``bench/eventstore.py`` over stdin/stdout, one JSON object a line:

- ``{"op": "subscribe", "sessions": [...]}``: a live tail of each session (``store.subscribe``),
  as a real consumer in another process would hold; answers ``{"ok": true}`` once every tail
  has read the table once.
- ``{"op": "listen", "channel": "..."}``: a bare asyncpg LISTEN, the baseline's receiver.
- ``{"op": "listen_read", "channel": "...", "url": "..."}``: the hand-written floor's
  receiver: a bare LISTEN whose doorbells say ``session:seq``, each followed by a plain
  SELECT of that session's rows after what was read of it (one read at a time a session,
  again if rung meanwhile), the least a subscriber that reads the table can do.
- ``{"op": "collect"}``: ``{"arrivals": [[id, monotonic_ns], ...]}`` since the last collect.
- ``{"op": "unsubscribe"}``, ``{"op": "exit"}``.

Times are ``time.monotonic_ns()``: CLOCK_MONOTONIC, one clock for every process of the machine.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg

from app.events.masking import SecretMasker
from app.store import EventStore
from app.store.config import StoreConfig

#: The floor's read: the rows of a session after a seq (the bench's raw table).
FLOOR_READ = (
    "SELECT event_id::text AS event_id, seq FROM raw_events"
    " WHERE session_id = $1 AND seq > $2 ORDER BY seq"
)


class Receiver:
    def __init__(self, store: EventStore, url: str) -> None:
        self.store = store
        self.url = url
        self.arrivals: list[tuple[str, int]] = []
        self.tails: list[asyncio.Task[None]] = []
        self.listener: asyncpg.Connection | None = None
        self.floor_listener: asyncpg.Connection | None = None
        self.floor_reads: set[asyncio.Future[None]] = set()
        self.pools: list[asyncpg.Pool] = []

    async def _tail(self, session: uuid.UUID, ready: asyncio.Event) -> None:
        arrivals = self.arrivals
        async with self.store.subscribe(
            session, after_seq=await self.store.last_seq(session)
        ) as tail:
            ready.set()
            async for event in tail:
                arrivals.append((str(event.event_id), time.monotonic_ns()))

    async def subscribe(self, sessions: list[str]) -> None:
        readies = []
        for session in sessions:
            ready = asyncio.Event()
            readies.append(ready)
            self.tails.append(asyncio.create_task(self._tail(uuid.UUID(session), ready)))
        for ready in readies:
            await ready.wait()
        await asyncio.sleep(0.1)  # every tail has made its first read and waits on its doorbell

    async def unsubscribe(self) -> None:
        for task in self.tails:
            task.cancel()
        await asyncio.gather(*self.tails, return_exceptions=True)
        self.tails.clear()

    async def listen(self, channel: str) -> None:
        arrivals = self.arrivals

        def arrived(_c: object, _pid: int, _channel: str, payload: str) -> None:
            arrivals.append((payload, time.monotonic_ns()))

        self.listener = await asyncpg.connect(self.url)
        await self.listener.add_listener(channel, arrived)

    async def listen_read(self, channel: str, url: str) -> None:
        arrivals = self.arrivals
        pool = await asyncpg.create_pool(url, min_size=2, max_size=4)
        self.pools.append(pool)
        read_up_to: dict[str, int] = {}
        reading: dict[str, bool] = {}  # a read on its way; True: rung again meanwhile

        async def read(session: str) -> None:
            while True:
                reading[session] = False
                rows = await pool.fetch(FLOOR_READ, uuid.UUID(session), read_up_to[session])
                now = time.monotonic_ns()
                for row in rows:
                    arrivals.append((row["event_id"], now))
                if rows:
                    read_up_to[session] = rows[-1]["seq"]
                if not reading[session]:
                    del reading[session]
                    return

        def rung(_c: object, _pid: int, _channel: str, payload: str) -> None:
            session, seq = payload.split(":")
            read_up_to.setdefault(session, int(seq) - 1)
            if session in reading:
                reading[session] = True
            else:
                reading[session] = False
                self.floor_reads.add(task := asyncio.ensure_future(read(session)))
                task.add_done_callback(self.floor_reads.discard)

        self.floor_listener = await asyncpg.connect(url)
        await self.floor_listener.add_listener(channel, rung)

    def collect(self) -> list[tuple[str, int]]:
        taken, self.arrivals[:] = list(self.arrivals), []
        return taken


async def main(url: str) -> None:
    async with await EventStore.open(url, config=StoreConfig(), masker=SecretMasker()) as store:
        receiver = Receiver(store, url)
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line:
                break
            command: dict[str, Any] = json.loads(line)
            answer: dict[str, Any] = {"ok": True}
            op = command["op"]
            if op == "subscribe":
                await receiver.subscribe(command["sessions"])
            elif op == "unsubscribe":
                await receiver.unsubscribe()
            elif op == "listen":
                await receiver.listen(command["channel"])
            elif op == "listen_read":
                await receiver.listen_read(command["channel"], command["url"])
            elif op == "collect":
                answer = {"arrivals": receiver.collect()}
            elif op == "exit":
                break
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
        await receiver.unsubscribe()
        for connection in (receiver.listener, receiver.floor_listener):
            if connection is not None:
                await connection.close()
        for pool in receiver.pools:
            await pool.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
