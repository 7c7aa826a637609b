"""The primary dies under load and its synchronous standby is promoted: `chronicle serve`
(API, projections runner and worker in one process) carries on against it without a restart,
through a write URL that names both servers (target_session_attrs=read-write), and no event
anyone was shown before the crash is lost. Real servers: the embedded PostgreSQL and a
standby made by `chronicle db replica`'s code; the primary's postmaster gets SIGKILL."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.sessions.leases import request_run
from app.store import EventStore, RecordedEvent, failover_url
from tests.support.agent_cli import agent_environment
from tests.support.chronicle_server import start_server
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.standby import primary_and_standby
from tests.support.waiting import until, wait_for_event
from tests.support.worker_sessions import recorded_session

pytestmark = pytest.mark.slow

SESSIONS = 3
STEPS = 8
#: Seconds between the primary's death and the promotion.
OUTAGE = 3.0


def finished(event: RecordedEvent) -> bool:
    return event.kind == "agent.state" and event.payload["state"] == "finished"


async def test_the_primary_dies_under_load_and_chronicle_goes_on_on_the_promoted_standby(
    fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    steps = [
        Reply(tool_calls=[tool_call("execute_bash", command=f"echo {n} >> log.txt")], delay=0.1)
        for n in range(SESSIONS * STEPS)
    ]
    fake_llm.script(*steps, *[Reply(tool_calls=[tool_call("finish", message="done")])] * SESSIONS)
    with primary_and_standby(synchronous=True) as pair:
        url = failover_url([pair.primary_url, pair.standby_url])
        env = agent_environment(
            fake_llm,
            url,
            tmp_path,
            CHRONICLE_OWNER_DATABASE_URL=pair.primary_admin_url,
            CHRONICLE_READ_DATABASE_URL=pair.standby_url,  # reads on the standby meanwhile
            CHRONICLE_WORKER_LEASE_DURATION="4",
            CHRONICLE_WORKER_HEARTBEAT_INTERVAL="1",
        )
        server = await asyncio.to_thread(start_server, env)
        token = await asyncio.to_thread(server.token, "operator", admin=True)
        masker = Settings(data_dir=pair.data_dir).masker()
        try:
            async with (
                await EventStore.open(url, masker=masker) as store,
                httpx.AsyncClient(
                    base_url=server.url, headers={"Authorization": f"Bearer {token}"}
                ) as api,
            ):
                sessions = []
                for n in range(SESSIONS):
                    (workspace := tmp_path / f"ws{n}").mkdir()
                    sessions.append(await recorded_session(store, fake_llm, workspace, "Count."))
                for session in sessions:
                    await request_run(store, session, reason="created")
                seen: dict[uuid.UUID, list[RecordedEvent]] = {s: [] for s in sessions}

                async def follow(session: uuid.UUID) -> None:
                    async with store.subscribe(session) as tail:
                        async for event in tail:
                            seen[session].append(event)

                followers = [asyncio.create_task(follow(s)) for s in sessions]
                await fake_llm.wait_until(lambda f: len(f.requests) >= STEPS, timeout=120)

                shown = {s: list(events) for s, events in seen.items()}  # before the crash
                await asyncio.to_thread(pair.kill_primary)
                killed_at = time.monotonic()
                # as a failover tool would, some seconds later: longer than the store's own
                # retries, so runs stop for want of a database and are taken up again
                await asyncio.sleep(OUTAGE)
                await asyncio.to_thread(pair.standby.promote)
                promoted_after = time.monotonic() - killed_at

                for session in sessions:
                    await wait_for_event(store, session, finished, timeout=180)
                ended_after = time.monotonic() - killed_at
                assert server.process.poll() is None  # the same process all along

                async def api_says_finished() -> bool:  # the projections runner went on too
                    states = []
                    for session in sessions:
                        answer = await api.get(f"/api/sessions/{session}")
                        assert answer.status_code == 200, answer.text
                        states.append(answer.json()["state"])
                    return states == ["finished"] * SESSIONS

                await until(api_says_finished, timeout=60, what="the API to show every run ended")

                for session in sessions:
                    events = await store.read(session)
                    assert [e.seq for e in events] == list(range(1, len(events) + 1))
                    before = [(e.seq, e.hash) for e in shown[session]]
                    assert [(e.seq, e.hash) for e in events[: len(before)]] == before
                    report = await store.verify(session)
                    assert report.ok, report.reason
                assert sum(map(len, shown.values())) > SESSIONS * 3  # it was mid-run
                for task in followers:
                    task.cancel()
            print(
                f"promoted {promoted_after:.1f} s after the primary died, with "
                f"{sum(map(len, shown.values()))} events shown; all ended "
                f"{ended_after:.1f} s after it died"
            )
        except (AssertionError, TimeoutError):
            server.stop()
            print(server.rest_of_output())
            raise
        finally:
            if server.process.poll() is None:
                server.stop()
