"""Sandboxes on a pool of Docker engines (``docker_hosts``): placed by free capacity, warmed
and reaped per host, and a session whose engine dies is interrupted, then resumed on the
other engine with its workspace.

Two engines of the tests' own (``docker_engines``), never the system's: its sandboxes come
and go with every other test, so what is free on it is never known. The session's test runs
the real controller, executor and sandbox against the fake model server; the model "thinks"
while the test kills the engine, so the loss is found by the executor's heartbeat.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from app.agent.steering import phase_of
from app.events import Run, RunOutput
from app.runtime.docker.host_pool import DockerHostPool
from app.runtime.docker.kind import KIND as DOCKER
from app.runtime.factory import make_pool, make_runtime
from app.runtime.provisioner import NoCapacityError
from app.runtime.remote import ProvisionedRuntime
from app.sessions.leases import request_run
from app.sessions.runner import SessionOptions, run_session
from app.sessions.sql.steering_marks import steering_marks
from app.sessions.worker import run_worker
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.host_pools import sandboxes_on
from tests.support.sandboxes import sandbox_settings
from tests.support.second_engine import SecondEngine
from tests.support.tls_certs import make_tls_files
from tests.support.waiting import until, wait_for_event, wait_for_events
from tests.support.worker_sessions import recorded_session

pytestmark = pytest.mark.usefixtures("docker_engines")

THINKING = 4.0  # seconds the model takes for the step during which the engine dies


def pool_settings(tmp_path: Path, engines: list[SecondEngine], caps: list[int], **extra: object):  # type: ignore[no-untyped-def]
    hosts = [f"{engine.url}?max_sandboxes={cap}" for engine, cap in zip(engines, caps, strict=True)]
    return sandbox_settings(tmp_path).model_copy(update={"docker_hosts": hosts, **extra})


@pytest.fixture
def engines(docker_engines: list[SecondEngine]) -> list[SecondEngine]:
    """The two engines, empty of sandboxes before and after the test."""
    for engine in docker_engines:
        for container in engine.client().containers.list(all=True):
            container.remove(force=True)
    yield docker_engines  # type: ignore[misc]
    for engine in docker_engines:
        for container in engine.client().containers.list(all=True):
            container.remove(force=True)


async def test_sandboxes_go_where_most_capacity_is_free(
    engines: list[SecondEngine], tmp_path: Path
) -> None:
    a, b = engines
    config = pool_settings(tmp_path, engines, [1, 2]).runtime_config()
    started = []
    try:
        for where in (b, a, b):  # free a=1 b=2 -> b; a=1 b=1 tie -> a, listed first; a=0 b=1 -> b
            runtime = make_runtime(config, tmp_path / f"ws{len(started)}", uuid.uuid4(), "docker")
            assert isinstance(runtime, ProvisionedRuntime)
            await runtime.start()
            started.append(runtime)
            await runtime.wait_ready(60)
            assert runtime.host == where.url and runtime.sandbox_id.endswith(f"@{where.url}")
            result = await runtime.execute(Run(command="echo here"))
            assert isinstance(result, RunOutput) and result.output == "here\n"
        assert len(sandboxes_on(a)) == 1 and len(sandboxes_on(b)) == 2
        full = make_runtime(config, tmp_path / "full", uuid.uuid4(), "docker")
        with pytest.raises(NoCapacityError, match=r"runs 1 of 1; .* runs 2 of 2"):
            await full.start()
    finally:
        for runtime in started:
            await runtime.close()
    assert sandboxes_on(a) == [] and sandboxes_on(b) == []


async def test_the_warm_pool_and_the_reaper_work_on_every_host(
    engines: list[SecondEngine], tmp_path: Path
) -> None:
    a, b = engines
    config = pool_settings(tmp_path, engines, [2, 2], sandbox_pool_size=4).runtime_config()
    pool = make_pool(config, "docker")
    await pool.start()
    try:
        assert pool.available == 4
        assert len(sandboxes_on(a)) == 2 and len(sandboxes_on(b)) == 2  # spread by free room
        warm = await pool.acquire()
        result = await warm.execute(Run(command="echo warm"))
        assert isinstance(result, RunOutput) and result.output == "warm\n"
        await warm.close()
    finally:
        await pool.close()
    assert sandboxes_on(a) == [] and sandboxes_on(b) == []

    # The worker's reaper (the docker kind's, over every host): quiet ones go, busy stay.
    quiet = [make_runtime(config, tmp_path / f"q{i}", uuid.uuid4(), "docker") for i in range(2)]
    busy = make_runtime(config, tmp_path / "busy", uuid.uuid4(), "docker")
    for runtime in (*quiet, busy):
        await runtime.start()
        await runtime.wait_ready(60)
    assert {r.host for r in quiet} == {a.url, b.url}  # one quiet sandbox on each host

    async def keep_busy() -> None:
        while True:
            await busy.heartbeat()
            await asyncio.sleep(0.3)

    assert DOCKER.reap_forever is not None
    reaper = asyncio.create_task(DOCKER.reap_forever(config, 2.0, 0.5))
    beating = asyncio.create_task(keep_busy())
    try:
        await until(
            lambda: len(sandboxes_on(a)) + len(sandboxes_on(b)) == 1,
            timeout=30,
            what="the quiet sandboxes reaped on both hosts",
        )
        assert sandboxes_on(busy_host := next(e for e in engines if e.url == busy.host))
        assert await busy.alive()
    finally:
        for task in (reaper, beating):
            task.cancel()
        await asyncio.gather(reaper, beating, return_exceptions=True)
        for runtime in (*quiet, busy):
            await runtime.close()
    assert busy_host is not None


async def test_a_session_whose_engine_dies_is_interrupted_and_resumes_on_the_other(
    engines: list[SecondEngine], store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    a, b = engines
    hosts = [f"{a.url}?max_sandboxes=3", f"{b.url}?max_sandboxes=1"]  # a has more room
    settings = settings_for(
        fake_llm, tmp_path, sandbox_heartbeat_interval=0.3, docker_hosts=hosts, runtime="docker"
    )
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo kept > notes.txt; echo one")]),
        Reply(tool_calls=[tool_call("execute_bash", command="echo lost")], delay=THINKING),
        Reply(tool_calls=[tool_call("execute_bash", command="cat notes.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    session = uuid.uuid4()
    workspace = tmp_path / "ws"

    async def the_host_dies() -> None:
        await wait_for_event(store, session, lambda e: e.kind == "run.output", timeout=120)
        await asyncio.to_thread(a.kill)

    killer = asyncio.create_task(the_host_dies())
    try:
        _, outcome = await run_session(
            store, settings, SessionOptions(workspace=workspace),
            task="Work in the shell.", session_id=session,
        )  # fmt: skip
        await killer
        assert outcome == "stopped"
        events = await store.read(session)
        ready = [e for e in events if e.kind == "runtime.ready"]
        assert [e.payload["sandbox_id"].split("@", 1)[1] for e in ready] == [a.url]
        failed = [e for e in events if e.kind == "runtime.failed"]
        assert len(failed) == 1 and f"the sandbox host {a.url} is unreachable" in str(
            failed[0].payload["message"]
        )
        assert "the session is interrupted" in failed[0].payload["message"]
        assert not [e for e in events if e.kind == "agent.state" and e.payload["state"] == "error"]
        assert phase_of(await steering_marks(store, session)) == "interrupted"
        assert (workspace / "notes.txt").read_text() == "kept\n"

        # A resume, from the log: the sandbox starts on the engine that is left.
        _, outcome = await run_session(
            store, settings, SessionOptions(workspace=workspace), session_id=session
        )
        assert outcome == "finished"
        events = await store.read(session)
        ready = [e for e in events if e.kind == "runtime.ready"]
        assert [e.payload["sandbox_id"].split("@", 1)[1] for e in ready] == [a.url, b.url]
        outputs = [e.payload["output"] for e in events if e.kind == "run.output"]
        assert outputs[0] == "one\n" and outputs[-1] == "kept\n"  # the workspace went along
        assert sandboxes_on(b) == []  # released at the end of the run
    finally:
        killer.cancel()
        await asyncio.gather(killer, return_exceptions=True)
        if a.process is None:
            await asyncio.to_thread(a.start)  # the engine comes back for the next tests


async def test_a_full_pool_hands_the_run_back_until_a_host_has_room(
    engines: list[SecondEngine], store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    """Every host at its maximum: the worker's run finds no room, says so in the log and is
    tried again (as a refused one), not failed; once a sandbox goes, the session runs."""
    a, b = engines
    hosts = [f"{a.url}?max_sandboxes=1", f"{b.url}?max_sandboxes=1"]
    settings = settings_for(
        fake_llm, tmp_path, docker_hosts=hosts, worker_heartbeat_interval=0.5,
        worker_refused_backoff=0.3, worker_refused_backoff_max=0.6,
    )  # fmt: skip
    config = settings.runtime_config()
    blockers = [make_runtime(config, tmp_path / f"b{i}", uuid.uuid4(), "docker") for i in (0, 1)]
    for blocker in blockers:
        await blocker.start()
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo ran")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = await recorded_session(store, fake_llm, workspace, "Run.", runtime="docker")
    stop = asyncio.Event()
    worker = asyncio.create_task(run_worker(store, settings, stop=stop, max_sessions=1))
    try:
        await request_run(store, session, reason="created")
        refused = await wait_for_events(
            store, session, 2, lambda e: e.kind == "runtime.failed", timeout=60
        )  # tried twice, refused twice
        assert "no Docker host has room for another sandbox" in refused[0].payload["message"]
        assert "runs 1 of 1" in refused[0].payload["message"]
        assert not [e for e in await store.read(session) if e.kind == "agent.state"]
        await blockers[1].close()  # room on b
        await wait_for_event(
            store,
            session,
            lambda e: e.kind == "agent.state" and e.payload["state"] == "finished",
            timeout=120,
        )
    finally:
        stop.set()
        await asyncio.wait_for(worker, 60)
        for blocker in blockers:
            await blocker.close()
    events = await store.read(session)
    ready = [e.payload["sandbox_id"] for e in events if e.kind == "runtime.ready"]
    assert len(ready) == 1 and ready[0].endswith(f"@{b.url}")
    assert [e.payload["output"] for e in events if e.kind == "run.output"] == ["ran\n"]


async def test_an_engine_over_tcp_with_mutual_tls(
    engines: list[SecondEngine], tmp_path: Path
) -> None:
    """A ``tcp://`` entry: reached with the client certificate, the engine verified against
    the CA; a CA that did not sign the engine's certificate makes it unreachable, saying so."""
    _, b = engines
    assert b.tls is not None
    tls = b.tls
    settings = sandbox_settings(tmp_path).model_copy(
        update={
            "docker_hosts": [b.tls_url],
            "docker_tls_cert": tls.client_cert,
            "docker_tls_key": tls.client_key,
            "docker_tls_ca": tls.ca,
        }
    )
    runtime = make_runtime(settings.runtime_config(), tmp_path / "ws", uuid.uuid4(), "docker")
    assert isinstance(runtime, ProvisionedRuntime)
    await runtime.start()
    try:
        await runtime.wait_ready(60)
        assert runtime.host == b.tls_url
        result = await runtime.execute(Run(command="echo over tls"))
        assert isinstance(result, RunOutput) and result.output == "over tls\n"
        on_b = b.client().containers.list(filters={"label": f"chronicle.host={b.tls_url}"})
        assert [c.labels["chronicle.session"] for c in on_b] == [runtime.session_id]
    finally:
        await runtime.close()
    assert not b.client().containers.list(all=True)

    stranger = make_tls_files(tmp_path / "stranger", "another-ca")
    docker = sandbox_settings(tmp_path).runtime_config().docker
    pool = DockerHostPool(
        docker.model_copy(
            update={"hosts": [b.tls_url], "tls_cert": tls.client_cert,
                    "tls_key": tls.client_key, "tls_ca": stranger.ca}
        )
    )  # fmt: skip
    [health] = await pool.health()
    assert not health.reachable and "certificate verify failed" in str(health.problem), health
    with pytest.raises(NoCapacityError, match=r"is unreachable \(.*certificate verify failed"):
        await pool.acquire(str(uuid.uuid4()), tmp_path / "ws2")


async def test_an_ssh_engine_that_does_not_answer_is_skipped(
    engines: list[SecondEngine], tmp_path: Path
) -> None:
    """An ``ssh://`` entry goes through the ssh program; one whose host refuses is named
    unreachable, and placement uses the engines that answer."""
    a, _ = engines
    docker = sandbox_settings(tmp_path).runtime_config().docker
    pool = DockerHostPool(docker.model_copy(update={"hosts": ["ssh://nobody@127.0.0.1:1", a.url]}))
    health = {h.host: h for h in await pool.health()}
    assert not health["ssh://nobody@127.0.0.1:1"].reachable
    assert health[a.url].reachable and health[a.url].capacity >= 1
    sandbox = await pool.acquire(str(uuid.uuid4()), tmp_path / "ws")
    try:
        assert sandbox.host == a.url
    finally:
        await pool.release(sandbox.host, sandbox.sandbox_id)
