"""Waiting for an evaluation run started through a real server's API to finish."""

from __future__ import annotations

import time
from typing import Any

import httpx


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def wait_finished(url: str, token: str, run: str, timeout: float = 180) -> dict[str, Any]:
    """The run's summary once its status is ``finished``; fails after ``timeout`` seconds
    with the last summary."""
    deadline = time.monotonic() + timeout
    while True:
        response = httpx.get(f"{url}/api/evaluations/{run}", headers=bearer(token))
        assert response.status_code == 200, response.text
        summary: dict[str, Any] = response.json()
        if summary["status"] == "finished":
            return summary
        assert time.monotonic() < deadline, f"run {run} never finished: {response.text}"
        time.sleep(0.3)
