"""Reading the settings imports no engine: ``app/config`` holds the component configs of
packages whose ``__init__`` would import the store, the gateway and Docker's SDK; those packages
export lazily (``app/exports.py``), so a fresh interpreter that reads the settings has none of
them."""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "asyncpg",
    "docker",
    "litellm",
    "app.store.event_store",
    "app.llm.gateway",
    "app.runtime.docker.runtime",
    "app.projections.runner",
)


def test_reading_the_settings_imports_no_engine() -> None:
    probe = (
        "import sys, app.config\n"
        "s = app.config.Settings()\n"
        "s.runtime_config(environ={}), s.executor\n"
        "s.store, s.projections\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
