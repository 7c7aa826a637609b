"""The other process of the projections lag benchmark: a runner that notes when each event's
batch committed.

    python bench/projections_follower.py URL

Prints ``{"ready": true}`` once the runner has caught up with the log, then, when a line
arrives on stdin, stops the runner and prints ``{"applied": [[event_id, monotonic_ns], ...]}``.
Times are ``time.monotonic_ns()``: CLOCK_MONOTONIC, one clock for every process of the machine.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.events.masking import SecretMasker
from app.projections import ProjectionRunner, ProjectionsConfig, SessionState
from app.store import EventStore, RecordedEvent
from app.store.config import StoreConfig


async def follow(url: str) -> None:
    applied: list[tuple[str, int]] = []

    def note(batch: Sequence[RecordedEvent]) -> None:
        now = time.monotonic_ns()
        applied.extend((str(event.event_id), now) for event in batch)

    async with await EventStore.open(
        url, config=StoreConfig(poll_interval=0.5), masker=SecretMasker()
    ) as store:
        runner = ProjectionRunner(store, SessionState(), ProjectionsConfig(), applied=note)
        task = asyncio.create_task(runner.run())
        await runner.caught_up.wait()
        applied.clear()
        print(json.dumps({"ready": True}), flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        runner.stop()
        await task
    print(json.dumps({"applied": applied}), flush=True)


if __name__ == "__main__":
    asyncio.run(follow(sys.argv[1]))
