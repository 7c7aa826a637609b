"""A long read runs without the cyclic collector: its rows are decoded with no collection in
between (each full collection walks every object of the process), the events come back
unchanged, and the collector runs again afterwards.

Before the pause (app/store/collector_pause.py) this read of 5,000 events with a collection
threshold of 100 ran ~200 collections while the rows were built: the first assertion
failed."""

from __future__ import annotations

import gc
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from app.events import Message
from app.store import EventStore

EVENTS = 5000


@pytest.fixture
def eager_collector() -> Iterator[list[int]]:
    """The collector on with a low threshold; the generations of the collections it runs."""
    threshold = gc.get_threshold()
    was = gc.isenabled()
    collections: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.set_threshold(100, 10, 10)
    gc.enable()
    gc.callbacks.append(seen)
    yield collections
    gc.callbacks.remove(seen)
    gc.set_threshold(*threshold)
    if not was:
        gc.disable()


async def test_a_long_read_runs_no_collection_and_returns_the_events(
    store: EventStore, eager_collector: list[int]
) -> None:
    session = uuid.uuid4()
    texts = [f"event {i} " + "x" * (i % 50) for i in range(EVENTS)]
    await store.append(session, [Message(content=text) for text in texts])
    eager_collector.clear()
    events = await store.read(session)
    # the read's own bookkeeping before and after the fetch may run one or two; the rows'
    # decoding, ~20,000 tracked objects at a threshold of 100, would run ~200
    assert len(eager_collector) <= 2, f"{len(eager_collector)} collections during the read"
    assert [event.seq for event in events] == list(range(1, EVENTS + 1))
    assert [event.payload["content"] for event in events] == texts
    assert [event.event().model_dump()["content"] for event in events[:3]] == texts[:3]
    assert gc.isenabled()
    gc.collect(0)  # the collector runs after the read
    assert eager_collector and eager_collector[-1] == 0


async def test_a_failed_read_leaves_the_collector_running(
    store: EventStore, eager_collector: list[int]
) -> None:
    with pytest.raises(Exception):  # noqa: B017 - any error: the query is refused
        await store._fetch("SELECT no_such_column FROM events")
    assert gc.isenabled()
