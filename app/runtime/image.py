"""Where the sandbox server's code lives (and, for Docker, the image built from it)."""

from __future__ import annotations

from pathlib import Path

RUNTIME_IMAGE_DIR = Path(__file__).resolve().parents[2] / "runtime_image"
