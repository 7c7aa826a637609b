"""The collector pause a read takes: off inside, back on after (also after an error), and a
caller's own decision to keep it off is kept."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from app.store.collector_pause import collector_paused


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_inside_and_running_after(collector_on: None) -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_running_again_after_an_error(collector_on: None) -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the read failed")
    assert gc.isenabled()


def test_overlapping_pauses_leave_it_running(collector_on: None) -> None:
    """Two reads that overlap (the second starts while the first holds the pause, and ends
    after it): only the first resumes the collector, and it ends up running."""
    first = collector_paused()
    second = collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off(collector_on: None) -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
