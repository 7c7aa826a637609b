"""The sets of kinds are derived from the event classes' ``handled_by``, in one place."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import get_args

import pytest

import app.events
from app.events import (
    ACTION_KINDS,
    AWAITED_KINDS,
    EVENT_TYPES,
    HANDLED_KINDS,
    OBSERVATION_KINDS,
    Action,
    Event,
    Observation,
    RuntimeRestarted,
    parse_event,
)
from app.events.registry import EVENT_CLASSES
from app.events.truncation import cut_middle
from app.runtime.image import RUNTIME_IMAGE_DIR


@pytest.fixture
def sandbox_package(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The sandbox server's package (standard library only, so it cannot import app)."""
    monkeypatch.syspath_prepend(str(RUNTIME_IMAGE_DIR))
    return importlib.import_module("chronicle_sandbox")


def test_each_service_answers_its_own_kinds() -> None:
    assert HANDLED_KINDS == {
        "sandbox": frozenset({"run", "file.read", "file.write", "file.edit"}),
        "mcp": frozenset({"mcp.call"}),
    }


def test_awaited_kinds_are_the_handled_actions() -> None:
    assert AWAITED_KINDS == HANDLED_KINDS["sandbox"] | HANDLED_KINDS["mcp"]
    assert AWAITED_KINDS < ACTION_KINDS
    assert ACTION_KINDS - AWAITED_KINDS == {"think", "finish", "imported"}  # nothing runs them


def test_only_actions_are_handled() -> None:
    for kind, cls in EVENT_TYPES.items():
        if cls.handled_by is not None:
            assert issubclass(cls, Action), kind
    assert all(issubclass(EVENT_TYPES[kind], Action) for kind in ACTION_KINDS)
    assert all(issubclass(EVENT_TYPES[kind], Observation) for kind in OBSERVATION_KINDS)
    assert not ACTION_KINDS & OBSERVATION_KINDS


def test_the_sandbox_servers_runnable_kinds_are_the_registrys(
    sandbox_package: ModuleType,
) -> None:
    actions = importlib.import_module("chronicle_sandbox.actions")
    assert len(actions.RUNNABLE) == len(set(actions.RUNNABLE))
    assert set(actions.RUNNABLE) == HANDLED_KINDS["sandbox"]


def test_runtime_restarted_is_neither_action_nor_observation() -> None:
    """So the database's kind sets (migration 0003) need no change for it."""
    event = parse_event({"kind": "runtime.restarted", "reason": "killed", "restart": 1})
    assert isinstance(event, RuntimeRestarted) and event.source == "environment"
    assert "runtime.restarted" not in ACTION_KINDS | OBSERVATION_KINDS


@pytest.mark.parametrize("size", [0, 10, 30_000, 30_001, 123_457, 2_000_000])
def test_observations_are_cut_like_the_sandbox_cuts_output(
    sandbox_package: ModuleType, size: int
) -> None:
    output = importlib.import_module("chronicle_sandbox.output")
    text = "".join(chr(ord("a") + i % 26) for i in range(size))
    cut, removed = cut_middle(text, 30_000)
    assert (cut, removed > 0) == output.truncate_text(text, 30_000)
    assert removed == max(0, size - 30_000)
    if removed:
        assert f"[... {removed:,} characters truncated ...]" in cut
        assert cut.startswith(text[:15_000]) and cut.endswith(text[-15_000:])


def _declared_kind_classes() -> dict[type[Event], str]:
    """Every class of app/events that declares a kind of its own (a ``Literal`` kind), with
    its module's name."""
    for info in pkgutil.iter_modules(app.events.__path__):
        importlib.import_module(f"app.events.{info.name}")
    found: dict[type[Event], str] = {}
    pending: list[type[Event]] = [Event]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("app.events.") and get_args(
            cls.model_fields["kind"].annotation
        ):
            found[cls] = cls.__module__
    return found


def test_every_class_of_a_kind_is_registered() -> None:
    """A kind's class that its module forgot to list would be refused by every append, with
    nothing saying why."""
    missing = {
        cls.__name__: module
        for cls, module in _declared_kind_classes().items()
        if cls not in EVENT_CLASSES
    }
    assert missing == {}, (
        f"add each class to KIND_CLASSES at the end of its module ({missing}); a new module "
        "of kinds adds its KIND_CLASSES to EVENT_CLASSES in app/events/registry.py"
    )
