"""Reads of the log on hot standbys, never behind what the primary had when the read began.

``CHRONICLE_READ_DATABASE_URL`` names standbys fed by streaming replication. A standby is
behind the primary by some WAL, so a read it serves is checked against a *watermark* taken
on the primary first, and a read that falls short goes to the primary instead; a reader never
hands out less than the primary had (docs/scale-out.md, "Position watermarks"):

- a session's read: the watermark is the session's ``last_seq`` on the primary (one index
  lookup). Seqs are gapless, so the standby's answer is whole exactly when it holds every seq
  from the cursor up to the watermark (or a full page of them);
- the global read, by ``(tx, global_position)``: the watermark is the primary's horizon,
  ``pg_snapshot_xmin(pg_current_snapshot())``. Every row a read on the primary could return
  has a ``tx`` below it, so a standby whose own horizon has reached it has them all; a standby
  behind it answers only with a full page (there is more to read anyway).

Either way, a standby's answer is never a gap or a repeat: the cursors are ones any server
can continue from. Which standby: round robin over those not cooling down; one whose read
failed (it went away, or was promoted and restarted) rests for ``cooldown`` seconds while the
primary serves its reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

import asyncpg

from app.store.records import RecordedEvent

#: The primary's heads of the sessions a read covers.
HEADS_SQL = "SELECT id, last_seq FROM sessions WHERE id = ANY($1::uuid[])"
#: The primary's horizon: every transaction below it has ended.
HORIZON_SQL = "SELECT pg_snapshot_xmin(pg_current_snapshot())"


@dataclass
class ReplicaStats:
    """How the reads were served, for tests, benchmarks and ``chronicle db replica status``."""

    served: int = 0
    """Reads a standby answered whole."""
    behind: int = 0
    """Reads (or sessions of a pooled read) a standby had not caught up for: read on the primary."""
    failed: int = 0
    """Reads a standby could not answer (it went away): read on the primary."""


@dataclass
class Replica:
    """One standby: its pool, and until when it rests after a failed read."""

    name: str
    """Its URL without the password, for logs."""
    pool: asyncpg.Pool
    resting_until: float = 0.0


class ReadReplicas:
    """The standbys a store's reads may go to, taken in turn."""

    def __init__(
        self,
        replicas: Sequence[Replica],
        *,
        cooldown: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._replicas = list(replicas)
        self._cooldown = cooldown
        self._clock = clock
        self._turn = 0
        self.stats = ReplicaStats()

    def __bool__(self) -> bool:
        return bool(self._replicas)

    @property
    def names(self) -> list[str]:
        return [replica.name for replica in self._replicas]

    def choose(self) -> Replica | None:
        """The next standby in turn that is not resting; None when all rest (or none is set)."""
        now = self._clock()
        for _ in range(len(self._replicas)):
            replica = self._replicas[self._turn % len(self._replicas)]
            self._turn += 1
            if replica.resting_until <= now:
                return replica
        return None

    def failed(self, replica: Replica) -> None:
        """The standby did not answer: the primary serves its share for a while."""
        replica.resting_until = self._clock() + self._cooldown
        self.stats.failed += 1

    async def close(self) -> None:
        for replica in self._replicas:
            await replica.pool.close()


def sessions_behind(
    cursors: Mapping[UUID, int],
    heads: Mapping[UUID, int],
    events: Iterable[RecordedEvent],
    limit: int | None,
) -> set[UUID]:
    """The sessions a standby's answer is short for: it holds fewer of the seqs after the
    session's cursor than the primary's head (``heads``, the watermark) says there are, and
    not a full page of them. A session the primary has no head for has no events to miss."""
    counts: dict[UUID, int] = dict.fromkeys(cursors, 0)
    for event in events:
        if event.session_id in counts and event.seq > cursors[event.session_id]:
            counts[event.session_id] += 1
    behind = set()
    for session_id, after_seq in cursors.items():
        wanted = max(heads.get(session_id, 0) - after_seq, 0)
        if limit is not None:
            wanted = min(wanted, limit)
        if counts[session_id] < wanted:
            behind.add(session_id)
    return behind


def global_read_whole(primary_horizon: int, replica_horizon: int, rows: int, limit: int) -> bool:
    """A standby's page of the global log can be handed out: it is a full page, or the
    standby's horizon has reached the primary's, so it holds every row the primary would."""
    return rows >= limit or replica_horizon >= primary_horizon
