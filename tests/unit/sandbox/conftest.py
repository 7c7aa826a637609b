"""The sandbox's action server is a standalone package (runtime_image/): import it from there."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

import pytest

from app.runtime.image import RUNTIME_IMAGE_DIR


@pytest.fixture
def sandbox_module(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], ModuleType]:
    """``sandbox_module("output")`` is ``chronicle_sandbox.output``."""
    monkeypatch.syspath_prepend(str(RUNTIME_IMAGE_DIR))

    def load(name: str) -> ModuleType:
        return importlib.import_module(f"chronicle_sandbox.{name}")

    return load
