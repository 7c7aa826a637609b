"""A Docker engine that does not see the worker's files (an engine on another machine, here a
dockerd in a mount namespace of its own with an empty tmpfs over the worker's directory).

With shared files (bind mounts), its sandbox can never serve us: the start fails saying why,
instead of "not ready" or the container's own complaint alone. With copied files (volumes;
docs/sandboxes.md, "Files: shared or copied"), it works: the workspace goes in at the start
and comes back at the close, the server is reached through ``docker exec``, the reaper reads
its idle time the same way, and a workspace left behind by a worker that died is copied back
by the next start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from app.config import Settings
from app.events import FileWrite, FileWriteOutput, Run, RunOutput
from app.runtime.docker.host_pool import DockerHostPool
from app.runtime.docker.reaper import list_sandboxes
from app.runtime.docker.runtime import DockerRuntime
from app.runtime.errors import SandboxStartError
from app.runtime.image import ensure_image
from app.sessions.runner import SessionOptions, run_session
from app.store import EventStore
from tests.support.agent_session import settings_for
from tests.support.ci import IN_CI
from tests.support.fake_llm import FakeLlmServer, Reply, tool_call
from tests.support.second_engine import SecondEngine, load_sandbox_image
from tests.support.ssh_gate import SshGate, sshd_available


@pytest.fixture(scope="module")
def elsewhere(docker_ready: None) -> Iterator[tuple[SecondEngine, Path]]:
    """An engine that sees an empty directory where the worker's directory is; that directory."""
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI=true but this test needs root to start a Docker engine")
        pytest.skip("starting a Docker engine needs root")
    # short paths: a Unix socket's path must stay under ~100 bytes
    hidden = Path(tempfile.mkdtemp(prefix="chronicle-h-"))
    engine = SecondEngine(Path(tempfile.mkdtemp(prefix="chronicle-d3-")), hidden=hidden)
    try:
        engine.start()
        tag, _ = ensure_image(docker.from_env(), Settings().sandbox.docker.base_image)
        archive = engine.root / "sandbox-image.tar"
        subprocess.run(["docker", "save", "-o", str(archive), tag], check=True)
        load_sandbox_image(engine, archive)
        archive.unlink()
        yield engine, hidden
    finally:
        engine.stop()
        subprocess.Popen(["rm", "-rf", str(engine.root)], start_new_session=True)
        shutil.rmtree(hidden, ignore_errors=True)


async def test_a_sandbox_on_an_engine_that_does_not_see_our_files_says_so(
    elsewhere: tuple[SecondEngine, Path],
) -> None:
    engine, hidden = elsewhere
    (hidden / "workspace").mkdir()
    (hidden / "workspace" / "README").write_text("here, not there\n")
    runtime = DockerRuntime(
        hidden / "workspace",
        uuid.uuid4(),
        config=Settings().sandbox.docker,
        client=engine.client(),
        socket_root=hidden / "sockets",
    )
    try:
        await runtime.start()
        with pytest.raises(SandboxStartError, match="does not see this machine's files"):
            await runtime.wait_ready(timeout=15)
    finally:
        await runtime.close()


def _copied(
    workspace: Path, session: uuid.UUID, engine: SecondEngine, hidden: Path
) -> DockerRuntime:
    return DockerRuntime(
        workspace,
        session,
        config=Settings().sandbox.docker,
        client=engine.client(),
        socket_root=hidden / "sockets",
        files="copied",
    )


def _volumes(engine: SecondEngine, session: uuid.UUID) -> list[str]:
    return [v.name for v in engine.client().volumes.list() if str(session) in v.name]


async def test_a_sandbox_with_copied_files_works_there_and_brings_the_workspace_back(
    elsewhere: tuple[SecondEngine, Path],
) -> None:
    engine, hidden = elsewhere
    workspace = hidden / "copied"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("print('hello')\n")
    (workspace / "gone.txt").write_text("the sandbox deletes this\n")
    (workspace / os.fsdecode(b"caf\xe9.txt")).write_text("a name that is not UTF-8\n")
    session = uuid.uuid4()
    runtime = _copied(workspace, session, engine, hidden)
    try:
        await runtime.start()
        await runtime.wait_ready(timeout=30)
        listed = await runtime.execute(Run(command="cd /workspace && ls -b | sort && id -u"))
        assert isinstance(listed, RunOutput), listed
        assert "caf\\351.txt" in listed.output and "src" in listed.output, listed.output
        assert listed.output.split()[-1] == str(os.stat(workspace).st_uid)
        ran = await runtime.execute(Run(command="python3 src/app.py && rm gone.txt"))
        assert isinstance(ran, RunOutput) and ran.output == "hello\n", ran
        wrote = await runtime.execute(FileWrite(path="out/result.txt", content="made there\n"))
        assert isinstance(wrote, FileWriteOutput), wrote
        await runtime.upload("blob.bin", bytes(range(256)) * 4096)
        assert await runtime.download("blob.bin") == bytes(range(256)) * 4096
        big = await runtime.execute(Run(command="head -c 3000000 /dev/zero | tr '\\0' a; echo"))
        assert isinstance(big, RunOutput) and big.output.startswith("aaaa"), big

        # the reaper asks the server inside, through an exec, how long it has been idle
        found = {s.session_id: s for s in await list_sandboxes(engine.client())}
        assert found[str(session)].idle_seconds is not None
        assert found[str(session)].idle_seconds < 60
        # nothing reached the worker's directory yet: the sandbox works on its volume
        assert not (workspace / "out").exists() and (workspace / "gone.txt").exists()
    finally:
        await runtime.close()
    assert (workspace / "out" / "result.txt").read_text() == "made there\n"
    assert (workspace / "blob.bin").read_bytes() == bytes(range(256)) * 4096
    assert not (workspace / "gone.txt").exists()
    assert (workspace / os.fsdecode(b"caf\xe9.txt")).read_text() == "a name that is not UTF-8\n"
    assert _volumes(engine, session) == []
    assert not engine.client().containers.list(
        all=True, filters={"label": f"chronicle.session={session}"}
    )


async def test_a_workspace_left_behind_is_copied_back_by_the_next_start(
    elsewhere: tuple[SecondEngine, Path],
) -> None:
    engine, hidden = elsewhere
    workspace = hidden / "left"
    workspace.mkdir()
    session = uuid.uuid4()
    first = _copied(workspace, session, engine, hidden)
    await first.start()
    await first.wait_ready(timeout=30)
    ran = await first.execute(Run(command="echo before the crash > work.txt"))
    assert isinstance(ran, RunOutput), ran
    # the worker dies: nothing is closed, its container and volumes stay on the engine
    assert first._bridge is not None
    first._bridge.close()
    await first._close_client()
    assert len(_volumes(engine, session)) == 2

    second = _copied(workspace, session, engine, hidden)
    try:
        await second.start()
        assert (workspace / "work.txt").read_text() == "before the crash\n"
        await second.wait_ready(timeout=30)
        seen = await second.execute(Run(command="cat work.txt"))
        assert isinstance(seen, RunOutput) and seen.output == "before the crash\n", seen
    finally:
        await second.close()
    assert _volumes(engine, session) == []


async def test_a_pool_entry_says_its_engine_gets_copies(
    elsewhere: tuple[SecondEngine, Path], tmp_path: Path
) -> None:
    engine, hidden = elsewhere
    config = Settings().sandbox.docker.model_copy(update={"hosts": [f"{engine.url}?files=copied"]})
    pool = DockerHostPool(config, socket_root=hidden / "sockets")
    workspace = hidden / "pooled"
    workspace.mkdir()
    (workspace / "task.txt").write_text("from the worker\n")
    sandbox = await pool.acquire(str(uuid.uuid4()), workspace)
    try:
        await pool.wait_ready(sandbox, 30)
        seen = await sandbox.client.execute(Run(command="cat task.txt; echo done > done.txt"))
        assert isinstance(seen, RunOutput) and seen.output == "from the worker\n", seen
    finally:
        await pool.release(sandbox.host, sandbox.sandbox_id)
    assert (workspace / "done.txt").read_text() == "done\n"


@pytest.fixture
def over_ssh(
    elsewhere: tuple[SecondEngine, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[SshGate]:
    """The engine elsewhere, reached as ``ssh://`` is: through sshd and dial-stdio."""
    engine, _ = elsewhere
    if not sshd_available():
        if IN_CI:
            pytest.fail("CI=true but sshd is missing (scripts/ensure-test-services installs it)")
        pytest.skip("sshd is not installed")
    gate = SshGate(Path(tempfile.mkdtemp(prefix="chronicle-ssh-")), engine.url)
    gate.start()
    monkeypatch.setenv("PATH", f"{gate.path_dir}{os.pathsep}{os.environ['PATH']}")
    try:
        yield gate
    finally:
        gate.stop()
        shutil.rmtree(gate.root, ignore_errors=True)


async def test_an_ssh_engine_gets_copies_by_default(
    elsewhere: tuple[SecondEngine, Path], over_ssh: SshGate
) -> None:
    engine, hidden = elsewhere
    config = Settings().sandbox.docker.model_copy(update={"hosts": [over_ssh.url]})
    pool = DockerHostPool(config, socket_root=hidden / "sockets")
    [health] = await pool.health()
    assert health.reachable, health
    workspace = hidden / "over-ssh"
    workspace.mkdir()
    (workspace / "task.txt").write_text("sent over ssh\n")
    sandbox = await pool.acquire(str(uuid.uuid4()), workspace)
    try:
        await pool.wait_ready(sandbox, 60)
        seen = await sandbox.client.execute(Run(command="cat task.txt; seq 1 20000 > n.txt"))
        assert isinstance(seen, RunOutput) and seen.output == "sent over ssh\n", seen
        long = await sandbox.client.execute(Run(command="seq 1 200000 | tail -1; sleep 1; echo"))
        assert isinstance(long, RunOutput) and long.output == "200000\n\n", long
        idle = {s.session_id: s.idle_seconds for s in await pool.list_sandboxes()}
        assert idle[sandbox.sandbox_id.removeprefix("chronicle-")] is not None
    finally:
        await pool.release(sandbox.host, sandbox.sandbox_id)
    assert (workspace / "n.txt").read_text().splitlines()[-1] == "20000"
    assert not engine.client().containers.list(all=True, filters={"label": "chronicle.sandbox=1"})


async def test_a_session_on_copied_files_records_its_change_and_resumes(
    elsewhere: tuple[SecondEngine, Path], store: EventStore, fake_llm: FakeLlmServer, tmp_path: Path
) -> None:
    """A whole session on that engine: the run's ``workspace.diff`` sees what the sandbox did
    (the copy came back before it was taken), and a second run finds it again."""
    engine, hidden = elsewhere
    settings = settings_for(
        fake_llm, tmp_path, runtime="docker", docker_hosts=[f"{engine.url}?files=copied"]
    )
    workspace = hidden / "session"
    workspace.mkdir()
    (workspace / "README").write_text("start\n")
    fake_llm.script(
        Reply(tool_calls=[tool_call("execute_bash", command="echo made there > made.txt")]),
        Reply(tool_calls=[tool_call("finish", message="done")]),
        Reply(tool_calls=[tool_call("execute_bash", command="cat made.txt README")]),
        Reply(tool_calls=[tool_call("finish", message="done again")]),
    )
    session, outcome = await run_session(
        store, settings, SessionOptions(workspace=workspace), task="Make a file."
    )
    assert outcome == "finished"
    assert (workspace / "made.txt").read_text() == "made there\n"
    [diff] = [e for e in await store.read(session) if e.kind == "workspace.diff"]
    assert diff.payload["changed"] == ["made.txt"], diff.payload
    assert "+made there" in diff.payload["diff"]

    _, outcome = await run_session(
        store, settings, SessionOptions(workspace=workspace), session_id=session, task="Again."
    )
    assert outcome == "finished"
    outputs = [e.payload["output"] for e in await store.read(session) if e.kind == "run.output"]
    assert outputs[-1] == "made there\nstart\n"
    assert not [v for v in engine.client().volumes.list() if str(session) in v.name]
