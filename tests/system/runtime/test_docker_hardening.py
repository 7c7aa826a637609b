"""The Docker sandbox against an attacker inside it and another local user outside it.

Most tests are an attack that worked before the sandbox was hardened (the container ran as
root with default capabilities and a writable root, the socket directory was used without
checks and was the sandbox's to write, and the token was an environment variable); their
docstrings say how the old code failed them. The others guard what already held or is new
(no network, bounded tmpfs, the disk quota, who the sandbox runs as).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from app.config import Settings
from app.events import ErrorObservation, Run, RunOutput
from app.runtime import SandboxStartError
from app.runtime.client import SandboxClient
from app.runtime.docker.hardening import QuotaSupport
from app.runtime.docker.private_dir import ensure_private_dir, verify_private_dir
from app.runtime.docker.runtime import MOUNT_NAME, SOCKET_NAME, DockerRuntime
from app.runtime.docker.sandbox_user import prepare_workspace
from tests.support import pg_probe
from tests.support.pg_probe import answered, listening_tcp, probe_tcp, probe_unix
from tests.support.postgres import ServerAddress
from tests.support.repository import ROOT
from tests.support.sandboxes import sandbox_settings
from tests.support.waiting import until

NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]

AS_ROOT = os.geteuid() == 0
PG_PROBE = Path(pg_probe.__file__)
needs_root = pytest.mark.skipif(not AS_ROOT, reason="plays another local user (needs root)")


async def sh(runtime: DockerRuntime, command: str, timeout: float = 60) -> RunOutput:
    observation = await runtime.execute(Run(command=command, timeout=timeout))
    assert isinstance(observation, RunOutput), observation
    return observation


@contextlib.asynccontextmanager
async def sandbox(
    workspace: Path, settings: Settings, quota_support: QuotaSupport | None = None
) -> AsyncIterator[DockerRuntime]:
    runtime = DockerRuntime(
        workspace,
        uuid.uuid4(),
        config=settings.runtime_config().docker,
        quota_support=quota_support,
    )
    await runtime.start()
    try:
        await runtime.wait_ready(60)
        yield runtime
    finally:
        await runtime.close()


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path (Unix socket paths must stay under ~100 bytes), 0755 so
    that another host user can reach what is inside."""
    path = Path(tempfile.mkdtemp(prefix="chr-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def hardened(
    docker_ready: None, workspace: Path, tmp_path: Path
) -> AsyncIterator[DockerRuntime]:
    async with sandbox(workspace, sandbox_settings(tmp_path)) as runtime:
        yield runtime


# -- inside the container ------------------------------------------------------------------


async def test_commands_run_unprivileged_without_capabilities(hardened: DockerRuntime) -> None:
    """Before: uid 0, the default capability set, NoNewPrivs 0."""
    uid = (await sh(hardened, "id -u")).output.strip()
    assert uid != "0"
    status = await sh(hardened, "grep -E '^(CapEff|CapBnd|CapPrm|NoNewPrivs):' /proc/self/status")
    fields = dict(line.split(":\t") for line in status.output.strip().splitlines())
    assert fields["CapEff"] == fields["CapPrm"] == "0000000000000000"
    assert fields["CapBnd"] == "0000000000000000"  # cap_drop ALL, not only a non-root user
    assert fields["NoNewPrivs"] == "1"
    mknod = await sh(hardened, "mknod /tmp/disk b 8 0")
    assert mknod.exit_code != 0


async def test_root_is_read_only_and_temp_and_home_are_writable(hardened: DockerRuntime) -> None:
    """Before: the container's root was writable."""
    for target in ("/planted", "/usr/bin/planted", "/etc/planted"):
        result = await sh(hardened, f"touch {target}")
        assert result.exit_code != 0 and "Read-only file system" in result.output, result.output
    writable = await sh(hardened, 'echo x > /tmp/t && echo y > "$HOME/h" && cat /tmp/t "$HOME/h"')
    assert writable.output == "x\ny\n"
    mounts = (await sh(hardened, "cat /proc/mounts")).output.splitlines()
    for point in ("/tmp", "/home/sandbox"):
        (options,) = [line.split()[3] for line in mounts if line.split()[1] == point]
        assert {"nosuid", "nodev"} <= set(options.split(",")), (point, options)
    assert (await sh(hardened, 'test "$HOME" = /home/sandbox && echo ok')).output == "ok\n"


async def test_limits_are_set(hardened: DockerRuntime) -> None:
    """Memory plus swap equal to memory (no swap on top), pids bounded, no network."""
    assert hardened.container is not None
    config = hardened.container.attrs["HostConfig"]
    assert config["Memory"] > 0 and config["MemorySwap"] == config["Memory"]
    assert config["PidsLimit"] == 256
    assert config["ReadonlyRootfs"] is True and config["CapDrop"] == ["ALL"]
    assert config["SecurityOpt"] == ["no-new-privileges:true"]
    assert config["NetworkMode"] == "none"


async def test_fork_bomb_is_bounded(hardened: DockerRuntime) -> None:
    """Docker bounds processes with its pids limit (the local jail: test_local_jail.py)."""
    bomb = "bomb() { bomb | bomb & }; bomb"
    result = await hardened.execute(Run(command=bomb, timeout=10))
    assert isinstance(result, RunOutput)
    await asyncio.sleep(1)  # the bomb runs against the limit for a while: that is the test
    cleanup = await hardened.execute(Run(command="pkill -9 -f bash -n; true", timeout=30))
    assert isinstance(cleanup, (RunOutput, ErrorObservation))

    async def answers() -> bool:
        probe = await hardened.execute(Run(command="echo alive", timeout=20))
        return isinstance(probe, RunOutput) and "alive" in probe.output

    # The limit kept the container alive: it answers again once the bomb is gone.
    await until(answers, timeout=120, what="the sandbox answering after the fork bomb", interval=1)


async def test_tmpfs_is_bounded(docker_ready: None, workspace: Path, tmp_path: Path) -> None:
    """Writing past sandbox_tmpfs_size into /tmp or the home fails (no space), the sandbox
    lives on: the disk a command can fill inside the container is bounded."""
    settings = sandbox_settings(tmp_path).model_copy(update={"sandbox_tmpfs_size": "8m"})
    async with sandbox(workspace, settings) as runtime:
        for where in ("/tmp", "$HOME"):
            fill = await sh(runtime, f"dd if=/dev/zero of={where}/fill bs=1M count=32 2>&1")
            assert fill.exit_code != 0 and "No space left on device" in fill.output
        assert (await sh(runtime, "rm /tmp/fill $HOME/fill; echo alive")).output == "alive\n"


async def test_token_is_not_in_any_environment_or_file(hardened: DockerRuntime) -> None:
    """Before: CHRONICLE_SANDBOX_TOKEN was in /proc/1/environ (and the server's own, which
    the same uid can read) and in ``docker inspect``."""
    assert hardened.client is not None and hardened.container is not None
    token = hardened.client.token
    environs = await sh(
        hardened,
        "for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat $f 2>/dev/null; echo; done"
        " | tr '\\0' '\\n'",
    )
    assert "PATH=" in environs.output  # the reads worked
    assert token not in environs.output
    assert (await sh(hardened, "ls -A /run/chronicle")).output.split() == []
    assert sorted(p.name for p in hardened.socket_dir.iterdir()) == [MOUNT_NAME, SOCKET_NAME]
    assert list(hardened.mount_dir.iterdir()) == []
    config = hardened.container.attrs["Config"]
    assert not any(token in item for item in (*config["Env"], *config["Cmd"]))


#: A server a command starts where the sandbox's own socket appeared, answering everything
#: with a forged idle time and a forged observation.
IMPOSTOR = r"""
import os, socket
path = "/run/chronicle/sandbox.sock"
if os.path.lexists(path):
    os.unlink(path)
server = socket.socket(socket.AF_UNIX)
server.bind(path)
server.listen()
body = b'{"idle": 12345.0, "kind": "run.output", "output": "forged\\n", "exit_code": 0}'
while True:
    connection, _ = server.accept()
    connection.recv(65536)
    connection.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    connection.close()
"""


async def test_sandbox_cannot_put_its_own_server_at_our_socket(hardened: DockerRuntime) -> None:
    """Before: the socket's directory was the sandbox's (mounted read-write), so a command
    could bind its own server at the path we and the reaper connect to, forge observations
    and report itself busy forever. Now the socket is moved where the sandbox cannot write."""
    assert hardened.client is not None and hardened.container is not None
    await hardened.upload("impostor.py", IMPOSTOR.encode())
    started = await sh(
        hardened,
        "setsid python3 impostor.py >/dev/null 2>&1 < /dev/null &"
        " for i in $(seq 50); do test -S /run/chronicle/sandbox.sock && break; sleep 0.1; done;"
        " test -S /run/chronicle/sandbox.sock && echo listening",
    )
    assert started.output.strip().endswith("listening")  # the impostor is in place
    label = hardened.container.labels["chronicle.socket"]
    assert label == str(hardened.socket_dir / SOCKET_NAME)
    for token in ("", hardened.client.token):  # the reaper's way (no token) and ours
        fresh = SandboxClient("http://sandbox", token, unix_socket=label)
        try:
            idle = await fresh.idle_seconds()
            assert idle is not None and idle < 600, idle
            if token:
                result = await fresh.execute(Run(command="echo real"))
                assert isinstance(result, RunOutput) and result.output == "real\n", result
        finally:
            await fresh.close()


# -- the setuid plant ----------------------------------------------------------------------


@needs_root
async def test_setuid_plant_gives_a_host_user_no_root(
    docker_ready: None, short_dir: Path, tmp_path: Path
) -> None:
    """A command plants setuid copies of bash and python3 in the workspace and tries to give
    them to root; a host user then runs them while the sandbox runs. Before, the sandbox was
    root: the copies were setuid-root and ``id -u`` printed 0. When the sandbox closes, the
    bits are cleared (they stayed, the sandbox uid's, before issue 22)."""
    workspace = short_dir / "ws"
    planted = [workspace / "bash-root", workspace / "python3-root"]
    async with sandbox(workspace, sandbox_settings(tmp_path)) as runtime:
        plant = await sh(
            runtime,
            "for b in bash python3; do cp /usr/bin/$b $b-root; chown root:root $b-root;"
            " chmod 4755 $b-root; done; ls -ln",
        )
        assert "Operation not permitted" in plant.output  # chown to root was refused
        for path in planted:
            info = path.stat()
            assert info.st_mode & stat.S_ISUID  # the plant itself happened: the test is real
            assert info.st_uid != 0
        for path in workspace.rglob("*"):
            info = path.lstat()
            assert not (info.st_uid == 0 and info.st_mode & (stat.S_ISUID | stat.S_ISGID)), path
        for command in (
            [str(planted[0]), "-p", "-c", "id -u"],
            [str(planted[1]), "-c", "import os; print(os.geteuid())"],
        ):
            ran = await asyncio.to_thread(
                subprocess.run, [*AS_NOBODY, *command], capture_output=True, text=True, timeout=30
            )
            assert ran.returncode == 0, ran.stderr
            assert ran.stdout.strip() not in ("", "0"), ran.stdout
    for path in planted:
        assert not path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID), path


# -- the socket directory ------------------------------------------------------------------


class Impostor:
    """Another local user's server at the path where we would connect: counts connections."""

    def __init__(self, path: Path) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen()
        self.listener.settimeout(0.2)
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                connection, _ = self.listener.accept()
                self.connections += 1
                connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.listener.close()


def squat(kind: str, root: Path, session: str) -> tuple[Path, Path]:
    """Plant the socket directory ``root/chronicle-<uid>`` as another user would; returns it
    and the directory the impostor listens in."""
    ours = root / f"chronicle-{os.getuid()}"
    theirs = root / "theirs"
    if kind == "owned by another user":
        ours.mkdir(mode=0o700)
        target = ours
    elif kind == "symlink to another user's directory":
        theirs.mkdir(mode=0o700)
        ours.symlink_to(theirs)
        target = theirs
    else:  # "world-writable"
        ours.mkdir()
        ours.chmod(0o777)
        target = ours
    session_dir = target / session
    session_dir.mkdir(mode=0o777)
    if kind != "world-writable":
        for path in (target, session_dir):
            os.chown(path, NOBODY, NOBODY)
    return ours, session_dir


@pytest.mark.parametrize(
    "kind", ["owned by another user", "symlink to another user's directory", "world-writable"]
)
async def test_a_squatted_socket_directory_is_avoided(
    docker_ready: None,
    short_dir: Path,
    tmp_path: Path,
    kind: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before the first fix: the directory was used as found; the squatter's server (or a
    reader of the token file it could then list) got our connection and token. Before this
    one: it was refused, so one user's squat stopped every Docker sandbox of another. Now the
    sandbox starts with its socket in a private directory of its own, and a warning says
    how to remove the squat."""
    if kind != "world-writable" and not AS_ROOT:
        pytest.skip("playing another user needs root")
    session = str(uuid.uuid4())
    planted, session_dir = squat(kind, short_dir, session)
    impostor = Impostor(session_dir / SOCKET_NAME)
    runtime = DockerRuntime(
        tmp_path / "ws",
        session,
        config=sandbox_settings(tmp_path).runtime_config().docker,
        socket_root=planted,
    )
    try:
        with caplog.at_level(logging.WARNING, logger="app.runtime.docker.runtime"):
            await runtime.start()
        await runtime.wait_ready(60)
        assert (await sh(runtime, "echo works")).output.strip() == "works"
        own_root = runtime.socket_dir.parent
        assert not runtime.socket_dir.is_relative_to(planted.resolve())
        assert not runtime.socket_dir.is_relative_to(planted)
        info = own_root.lstat()
        assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
        assert stat.S_IMODE(info.st_mode) == 0o700
        assert f"rm -rf {planted}" in caplog.text
        assert sorted(p.name for p in session_dir.iterdir()) == [SOCKET_NAME]  # no token
        assert impostor.connections == 0
    finally:
        impostor.close()
        await runtime.close()
    assert not own_root.exists()  # removed with the sandbox


def test_own_directory_readable_by_others_is_tightened(short_dir: Path) -> None:
    """An older Chronicle left its socket directory 0755: nobody else can have written in it,
    so it is made 0700 and used."""
    path = short_dir / "old"
    path.mkdir()
    path.chmod(0o755)
    verify_private_dir(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


def test_socket_root_in_a_directory_anyone_can_rename_in_is_refused(short_dir: Path) -> None:
    """A world-writable directory without the sticky bit (unlike /tmp) lets another user
    rename our checked directory away and put theirs in its place."""
    short_dir.chmod(0o777)
    with pytest.raises(SandboxStartError, match="sticky"):
        ensure_private_dir(short_dir / "chronicle-0")
    short_dir.chmod(0o1777)
    ensure_private_dir(short_dir / "chronicle-0")


# -- who the sandbox runs as ---------------------------------------------------------------


@needs_root
def test_root_owned_workspace_is_handed_over_without_following_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("root's")
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "main.py").write_text("print()")
    (workspace / "tool").write_bytes(b"")
    (workspace / "tool").chmod(0o4755)
    (workspace / "link").symlink_to(outside)
    os.link(outside, workspace / "hardlink")
    (workspace / "alices").write_text("")
    os.chown(workspace / "alices", 1000, 1000)
    user = prepare_workspace(workspace, 10001)
    assert (user.uid, user.gid) == (10001, 10001)
    for path in (workspace, workspace / "src", workspace / "src" / "main.py", workspace / "tool"):
        assert path.lstat().st_uid == 10001, path
    assert not (workspace / "tool").stat().st_mode & stat.S_ISUID  # chown cleared it
    assert (workspace / "link").lstat().st_uid == 10001
    assert outside.stat().st_uid == 0  # neither the symlink's target nor the hard link's
    assert (workspace / "alices").stat().st_uid == 1000  # other users' files are theirs
    again = prepare_workspace(workspace, 10001)  # nothing left to hand over
    assert again == user


@needs_root
def test_workspace_of_a_user_runs_as_that_user(tmp_path: Path) -> None:
    workspace = tmp_path / "alices"
    workspace.mkdir()
    os.chown(workspace, 1000, 0)
    user = prepare_workspace(workspace, 10001)
    assert (user.uid, user.gid) == (1000, 1000)  # never root's group either
    fresh = prepare_workspace(tmp_path / "new" / "ws", 10001)
    assert fresh.uid == 10001 and (tmp_path / "new" / "ws").stat().st_uid == 10001


@needs_root
def test_system_directory_is_not_handed_over() -> None:
    with pytest.raises(SandboxStartError, match="system directory"):
        prepare_workspace(Path("/usr"), 10001)
    assert Path("/usr").stat().st_uid == 0


@needs_root
def test_non_root_chronicle_needs_a_workspace_of_its_own(short_dir: Path) -> None:
    """Run as a normal user (nobody): its own workspace is used as is; root's is refused."""
    mine, roots = short_dir / "mine", short_dir / "roots"
    mine.mkdir()
    os.chown(mine, NOBODY, NOBODY)
    roots.mkdir()
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from app.runtime.errors import SandboxStartError\n"
        "from app.runtime.docker.sandbox_user import prepare_workspace\n"
        f"user = prepare_workspace(Path({str(mine)!r}), 10001)\n"
        "try:\n"
        f"    prepare_workspace(Path({str(roots)!r}), 10001)\n"
        "    refused = ''\n"
        "except SandboxStartError as exc:\n"
        "    refused = str(exc)\n"
        "print(json.dumps([user.uid, user.gid, refused]))\n"
    )
    ran = subprocess.run(
        [*AS_NOBODY, sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert ran.returncode == 0, ran.stderr
    uid, gid, refused = json.loads(ran.stdout)
    assert (uid, gid) == (NOBODY, NOBODY)
    assert "belongs to uid 0" in refused and "Use a directory you own" in refused


@needs_root
def test_non_root_chronicle_runs_a_sandbox_as_itself(docker_ready: None, short_dir: Path) -> None:
    """Chronicle run by a normal user (nobody, given access to the Docker socket): the
    container runs as that user, and what it writes in the workspace is that user's."""
    engine_socket = Path("/var/run/docker.sock")
    workspace = short_dir / "ws"
    workspace.mkdir()
    os.chown(workspace, NOBODY, NOBODY)
    script = (
        "import asyncio, uuid\n"
        "from pathlib import Path\n"
        "from app.config import Settings\n"
        "from app.events import Run\n"
        "from app.runtime.docker.runtime import DockerRuntime\n"
        "async def main():\n"
        f"    runtime = DockerRuntime(Path({str(workspace)!r}), uuid.uuid4(),\n"
        f"        config=Settings(data_dir=Path({str(short_dir / 'data')!r}))\n"
        "        .runtime_config().docker)\n"
        "    await runtime.start()\n"
        "    try:\n"
        "        await runtime.wait_ready(60)\n"
        "        done = await runtime.execute(Run(command='touch made-inside; id -u'))\n"
        "        print(done.output.strip())\n"
        "    finally:\n"
        "        await runtime.close()\n"
        "asyncio.run(main())\n"
    )
    docker_group = engine_socket.stat().st_gid
    as_user = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", f"--groups={docker_group}"]
    ran = subprocess.run(
        [*as_user, "--", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(short_dir)},
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip().splitlines()[-1] == str(NOBODY)
    made = (workspace / "made-inside").stat()
    assert (made.st_uid, made.st_gid) == (NOBODY, NOBODY)
    own_root = Path(tempfile.gettempdir()) / f"chronicle-{NOBODY}"
    assert own_root.stat().st_uid == NOBODY and stat.S_IMODE(own_root.stat().st_mode) == 0o700


# -- no way out to the database or the host's ports ----------------------------------------


async def test_no_way_to_postgres_or_host_ports(
    docker_ready: None, pg_address: ServerAddress, workspace: Path, tmp_path: Path
) -> None:
    """With networking off (the default) the standard-library PostgreSQL client reaches
    neither the PostgreSQL server's socket nor any TCP port listening on the host; the same
    client on the host does (so it is a real client, not a test that cannot fail). This held
    before the hardening too (no network, no host path mounted but the workspace): it keeps
    it so, e.g. against mounting the database's socket directory for convenience."""
    listener = socket.create_server(("127.0.0.1", 0))  # a host port known to be open
    try:
        unix = []
        tcp = listening_tcp()
        if pg_address.host.startswith("/"):
            unix.append(f"{pg_address.host}/.s.PGSQL.{pg_address.port}")
            assert answered(await asyncio.to_thread(probe_unix, unix[0]))  # from the host
        else:
            tcp.append((pg_address.host, pg_address.port))
        mine = ("127.0.0.1", listener.getsockname()[1])
        assert mine in tcp and (await asyncio.to_thread(probe_tcp, *mine, 1.0))["connected"]
        async with sandbox(workspace, sandbox_settings(tmp_path)) as runtime:
            await runtime.upload("pg_probe.py", await asyncio.to_thread(PG_PROBE.read_bytes))
            targets = json.dumps({"unix": unix, "tcp": tcp})
            ran = await sh(runtime, f"python3 pg_probe.py '{targets}'", timeout=600)
        inside = json.loads(ran.output)
        assert len(inside) == len(unix) + len(tcp)
        reached = [result for result in inside if result["connected"] or answered(result)]
        assert reached == [], reached
    finally:
        listener.close()


async def test_no_docker_socket_inside(hardened: DockerRuntime) -> None:
    result = await sh(hardened, "ls /run/docker.sock /var/run/docker.sock 2>&1; echo done")
    assert result.output.count("No such file or directory") == 2


# -- the disk quota ------------------------------------------------------------------------


async def test_disk_quota_where_the_driver_allows_it(
    docker_ready: None, workspace: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The quota is tried; an engine whose storage driver cannot enforce it (overlay2 on ext4,
    as on the test machines) refuses it, and the sandbox starts without it, logged once.
    Before, no quota was asked for at all: StorageOpt was empty and nothing was logged."""
    settings = sandbox_settings(tmp_path).model_copy(update={"sandbox_disk_quota": "1g"})
    support = QuotaSupport()
    engine = docker.from_env()
    caplog.set_level(logging.WARNING, logger="app.runtime.docker.hardening")
    for attempt in range(2):
        async with sandbox(workspace / str(attempt), settings, quota_support=support) as runtime:
            assert (await sh(runtime, "echo up")).output == "up\n"
            assert runtime.container is not None
            applied = runtime.container.attrs["HostConfig"].get("StorageOpt") or {}
    refusals = [r for r in caplog.records if "cannot limit a container's disk" in r.message]
    if refusals:  # overlay2 on ext4, as on the test machines
        assert applied == {}
        assert len(refusals) == 1  # once, though started twice
        assert not support.worth_trying(str(engine.api.base_url))
    else:  # the driver enforces it (the root is read-only: tmpfs bounds the rest)
        assert applied == {"size": "1g"}


# -- the environment -----------------------------------------------------------------------


async def test_only_named_host_variables_enter(
    docker_ready: None, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret in Chronicle's environment stays out; a variable named in sandbox_env enters."""
    monkeypatch.setenv("CHRONICLE_LLM_API_KEY", "sk-not-for-the-sandbox")
    monkeypatch.setenv("PROJECT_TOKEN", "named-by-the-user")
    settings = sandbox_settings(tmp_path).model_copy(update={"sandbox_env": ["PROJECT_TOKEN"]})
    async with sandbox(workspace, settings) as runtime:
        seen = (await sh(runtime, "env")).output
    assert "PROJECT_TOKEN=named-by-the-user" in seen
    assert "sk-not-for-the-sandbox" not in seen and "HOME=/home/sandbox" in seen
