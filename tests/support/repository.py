"""The checkout the tests run from, found once here so that a test file can move folders."""

from __future__ import annotations

from pathlib import Path

#: The repository's top directory (where pyproject.toml is).
ROOT = Path(__file__).resolve().parents[2]
