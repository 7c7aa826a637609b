"""Waiting for an evaluation run started through a real server's API to finish."""

from __future__ import annotations

import time
from typing import Any

import httpx


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def wait_finished(
    url: str, token: str, run: str, timeout: float = 180, status: str = "finished"
) -> dict[str, Any]:
    """The run's summary once its status is ``status`` (``finished``, or ``stopped`` on a
    configuration error); fails when it ends the other way, or after ``timeout`` seconds,
    with the last summary."""
    deadline = time.monotonic() + timeout
    while True:
        response = httpx.get(f"{url}/api/evaluations/{run}", headers=bearer(token))
        assert response.status_code == 200, response.text
        summary: dict[str, Any] = response.json()
        if summary["status"] == status:
            return summary
        assert summary["status"] not in {"finished", "stopped"} - {status}, summary
        assert time.monotonic() < deadline, f"run {run} never finished: {response.text}"
        time.sleep(0.3)
