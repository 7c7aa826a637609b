"""One client for the sandbox protocol, shared by every runtime (HTTP/JSON, see ``http``)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from app.events import Action, ErrorObservation, Observation, Run, parse_event
from app.runtime.errors import SandboxAuthError, SandboxStartError, SandboxUnavailableError
from app.runtime.http import HttpClient, HttpError, HttpResponse, HttpTimeout

#: Seconds added to an action's own timeout before the HTTP request gives up.
TRANSPORT_MARGIN = 30.0
#: Longest a Run without its own timeout may take on the server (its ``max_wait``), plus margin.
DEFAULT_ACTION_TIMEOUT = 120.0 + TRANSPORT_MARGIN


class SandboxClient:
    """Talks to one action server at ``base_url`` with its token (keep-alive connections)."""

    def __init__(self, base_url: str, token: str, *, unix_socket: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.unix_socket = unix_socket
        self._http = HttpClient(
            self.base_url,
            unix_socket=unix_socket,
            headers={"Authorization": f"Bearer {token}"} if token else {},
            timeout=DEFAULT_ACTION_TIMEOUT,
            connect_timeout=5.0,
        )

    async def close(self) -> None:
        await self._http.aclose()

    async def alive(self) -> bool:
        return await self.idle_seconds() is not None

    async def idle_seconds(self) -> float | None:
        """Seconds since the sandbox last served an authorised request; None if it is down."""
        try:
            response = await self._http.get("/alive", timeout=2.0)
        except HttpError:
            return None
        if response.status_code != 200:
            return None
        try:
            return float(response.json().get("idle", 0.0))
        except (ValueError, TypeError, AttributeError):  # not our server's answer
            return None

    async def heartbeat(self) -> None:
        await self.request("POST", "/heartbeat")

    async def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        delay = 0.01
        while time.monotonic() < deadline:
            if await self.alive():
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)
        raise SandboxStartError(f"the sandbox at {self.base_url} was not ready after {timeout:g} s")

    async def request(self, method: str, path: str, **kwargs: Any) -> HttpResponse:
        """A raw request to the sandbox; transport failures become ``SandboxUnavailableError``."""
        try:
            response = await self._http.request(method, path, **kwargs)
        except HttpTimeout as exc:
            raise SandboxUnavailableError(
                f"the sandbox at {self.base_url} did not answer in time ({exc})"
            ) from exc
        except HttpError as exc:
            raise SandboxUnavailableError(
                f"the sandbox at {self.base_url} is unreachable: {exc}"
            ) from exc
        if response.status_code == 401:
            raise SandboxAuthError(f"the sandbox at {self.base_url} refused the token")
        return response

    @staticmethod
    def _refusal(response: HttpResponse) -> str:
        try:
            return str(response.json().get("error", response.text))
        except (ValueError, AttributeError):  # not JSON, or not an object
            return response.text

    async def execute(self, action: Action, *, timeout: float | None = None) -> Observation:
        """Run ``action``; ``timeout`` bounds the whole request when the action sets none.

        Only a sandbox that is gone raises ``SandboxUnavailableError``: when the request
        fails but the sandbox still passes its liveness check, or its answer is not an
        observation, this one action gets an ``error`` observation and the sandbox goes on.
        """
        if isinstance(action, Run) and action.timeout is not None:
            timeout = action.timeout + TRANSPORT_MARGIN
        elif timeout is not None:
            timeout += TRANSPORT_MARGIN
        else:
            timeout = DEFAULT_ACTION_TIMEOUT
        try:
            # ASCII JSON: a lone surrogate travels as its \u escape (no UTF-8 encoder takes it).
            body = json.dumps({"kind": action.kind, **action.payload()}, allow_nan=False)
        except ValueError as exc:
            return _failed(f"the action cannot be sent to the sandbox: {exc}", "invalid_action")
        try:
            response = await self.request(
                "POST",
                "/execute",
                content=body.encode("ascii"),
                headers={"Content-Type": "application/json"},
                timeout=timeout,
            )
        except SandboxUnavailableError as exc:
            if not await self.alive():
                raise
            return _failed(_lost_action(exc.__cause__, timeout), "sandbox")
        return self._observation(response)

    @classmethod
    def _observation(cls, response: HttpResponse) -> Observation:
        """The observation in ``response``, or an ``error`` observation saying what came."""
        if response.status_code != 200:
            return _failed(
                f"the sandbox refused the action (HTTP {response.status_code}): "
                f"{cls._refusal(response)[:500]}",
                "sandbox",
            )
        try:
            answer = response.json()
        except ValueError:
            return _failed(
                f"the sandbox's answer to the action was not JSON: {response.text[:200]!r}",
                "sandbox",
            )
        try:
            observation = parse_event(answer)
        except ValueError as exc:
            return _failed(f"the sandbox's answer to the action is not valid: {exc}", "sandbox")
        if not isinstance(observation, Observation):
            return _failed(
                f"the sandbox answered with a {observation.kind!r}, not an observation", "sandbox"
            )
        return observation

    async def upload(self, path: str, data: bytes) -> None:
        response = await self.request("POST", "/upload", params={"path": path}, content=data)
        if response.status_code != 200:
            raise ValueError(f"upload of {path} refused: {self._refusal(response)}")

    async def download(self, path: str) -> bytes:
        response = await self.request("GET", "/download", params={"path": path})
        if response.status_code != 200:
            raise ValueError(f"download of {path} refused: {self._refusal(response)}")
        return response.content


def _failed(message: str, error_type: str) -> ErrorObservation:
    return ErrorObservation(message=message, error_type=error_type)


def _lost_action(cause: BaseException | None, timeout: float) -> str:
    """Why an action got no answer from a sandbox that still passes its liveness check."""
    if isinstance(cause, HttpTimeout):
        return (
            f"the sandbox gave no answer to the action within {timeout:g} s; it still answers "
            "its liveness check, so the action may still be running (check before repeating it)"
        )
    return (
        f"the sandbox dropped the connection while it ran the action ({cause}); it still "
        "answers its liveness check, so only this action failed, and it may have partly run"
    )
