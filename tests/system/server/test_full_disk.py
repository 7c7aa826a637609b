"""A full disk delays a session's run and never drops it (issue 23, item 1).

The database's tablespace sits on a small tmpfs that the test fills. Before, the run that met
the refusal (53100) was released as failed, its run request deleted and its error not
written (the disk was full), and the projection runner stopped for good: the session stayed
unfinished for ever, and the API answered 400 with the server's file paths. Now the run keeps
its request and is tried again, the API answers 503 with Retry-After and a plain sentence,
``/health/ready`` says not ready while the disk refuses writes, and once space is freed the
session finishes without anyone sending anything again.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.sessions.sql.users import add_user, create_token
from app.store import EventStore
from tests.support.chronicle_server import ServerProcess, database_environment, start_server
from tests.support.evaluation_api import bearer
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.postgres import PgServer
from tests.support.small_disk import SmallDisk, can_fill_a_disk, database_on_small_disk
from tests.support.waiting import until

#: Random text (nothing to compress) over the blob threshold: storing it must grow a table.
TOO_LONG_FOR_A_FULL_DISK = secrets.token_urlsafe(70_000)


async def finished(api: httpx.AsyncClient, session: str) -> bool:
    answer = await api.get(f"/api/sessions/{session}")
    return answer.status_code == 200 and answer.json()["state"] == "finished"


async def admin_token(admin_url: str) -> str:
    """An admin's API token, made through the database owner's login as the CLI makes it."""
    settings = Settings()
    async with await EventStore.open(
        admin_url, config=settings.store, masker=settings.masker()
    ) as owner:
        user = await add_user(owner, "root", is_admin=True)
        _, token = await create_token(owner, user.id)
    return token


async def ready(api: httpx.AsyncClient) -> bool:
    return (await api.get("/health/ready")).status_code == 200


async def test_a_full_disk_delays_a_run_until_space_is_freed_and_never_drops_it(
    pg_server: PgServer, pg_template: str, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    if (why := can_fill_a_disk(pg_server)) is not None:
        pytest.skip(why)
    finish = tool_call("finish", message="done")
    # the first answer comes once the disk is full, and cannot be stored then; the next are small
    fake_llm.script(
        Reply(content=TOO_LONG_FOR_A_FULL_DISK, tool_calls=[finish], held=True),
        *(Reply(tool_calls=[finish]) for _ in range(10)),
    )
    with database_on_small_disk(pg_server, pg_template) as (admin_url, disk):
        env = database_environment(
            pg_server,
            admin_url,
            tmp_path,
            llm_base_url=fake_llm.base_url,
            worker_refused_backoff="0.2",
            worker_refused_backoff_max="1",
        )
        token = await admin_token(admin_url)  # in-process: the CLI's two commands take seconds
        server = start_server(env)
        try:
            async with httpx.AsyncClient(
                base_url=server.url, headers=bearer(token), timeout=30
            ) as api:
                session = await run_through_a_full_disk(api, server, disk, fake_llm)
                events = (await api.get(f"/api/sessions/{session}/events?limit=1000")).json()
        finally:
            server.stop()
    states = [e["payload"]["state"] for e in events["events"] if e["kind"] == "agent.state"]
    assert states[-1] == "finished" and "error" not in states, states
    output = server.rest_of_output()
    assert "Traceback" not in output, output


async def run_through_a_full_disk(
    api: httpx.AsyncClient, server: ServerProcess, disk: SmallDisk, model: FakeLlmServer
) -> str:
    """A session created just before the disk fills, run through the fault; its id."""
    created = await api.post(
        "/api/sessions",
        json={"task": "Say done."},
        timeout=60,  # the first creation imports litellm
    )
    assert created.status_code == 201, created.text
    session: str = created.json()["id"]
    disk.fill()

    refused = await api.post("/api/sessions", json={"task": TOO_LONG_FOR_A_FULL_DISK})
    assert refused.status_code == 503, refused.text
    assert refused.headers["retry-after"].isdigit()
    assert refused.json()["detail"] == (
        "the database cannot take this now: its disk is full (an operator must free space); "
        "try again later"
    )
    not_ready = await api.get("/health/ready")
    assert not_ready.status_code == 503, not_ready.text
    checks = {check["name"]: check for check in not_ready.json()["checks"]}
    assert checks["writes"] == {
        "name": "writes",
        "ok": False,
        "detail": "refused: its disk is full (an operator must free space)",
    }
    # the session's run meets the full disk (53100) before any space is freed
    model.release_held()
    await until(
        lambda: any(session in line and "53100" in line for line in server.output),
        timeout=120,
        what="the session's run met the full disk",
    )
    assert not await ready(api)

    disk.free()
    await until(
        lambda: finished(api, session),
        timeout=120,
        what="the session finished once space was freed",
    )
    await until(lambda: ready(api), timeout=60, what="ready again")
    return session
