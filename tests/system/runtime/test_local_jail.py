"""The local jail against an attacker inside it: each attack that worked before it existed.

Before: the action server ran on the host with Chronicle's whole environment and only the
shell ran in bubblewrap, with ``--ro-bind / /``, every capability of root and no limits. From
a command, the embedded PostgreSQL's socket answered, ``mount`` remounted the host read-write,
``/run/docker.sock`` was there, ``env`` showed the model keys, a fork loop took every PID of
the machine, and a symlink swapped in a loop led file actions out of the workspace within
0.1 s. Each test below tries one of these against a real LocalRuntime (and, last, all of them
as a non-root user) and says what must happen now.

The fork loop, memory hog and CPU tests were not run against the old code on purpose: they
would have taken the shared test machine down (there was no limit at all; ``pid_max`` is
32768 here). Every other test fails against it: the old jail showed the host's / (so the
socket, /run and the home), kept CAP_SYS_ADMIN (the remount), passed ``os.environ`` and ran
the file actions outside the jail with a check-then-open race.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings, default_config_file
from app.runtime import LocalRuntime
from app.runtime.factory import make_runtime
from app.runtime.local.jail import ENV_ALLOWED
from app.runtime.local.limits import SandboxLimits
from tests.support import jail_attacks
from tests.support.ci import IN_CI
from tests.support.nonroot_user import as_user, ensure_user, interpreter_for
from tests.support.pg_probe import answered, listening_tcp, probe_unix
from tests.support.postgres import ServerAddress
from tests.support.repository import ROOT
from tests.support.waiting import pid_ended

REPO = ROOT
NONROOT_USER = "chronicle-jail-test"
SMALL = SandboxLimits(
    processes=64, memory_bytes=256 * 1024**2, file_size_bytes=1024**2, cpu_seconds=2
)
DOCKER_SOCKETS = ["/run/docker.sock", "/var/run/docker.sock"]


@pytest.fixture(autouse=True)
def needs_bwrap() -> None:
    if shutil.which("bwrap") is None:
        assert not IN_CI, "CI must install bubblewrap"
        pytest.skip("bubblewrap is not installed")


async def started(runtime: LocalRuntime) -> LocalRuntime:
    await runtime.start()
    await runtime.wait_ready(30)
    return runtime


@pytest.fixture
async def jailed(workspace: Path) -> AsyncIterator[LocalRuntime]:
    runtime = LocalRuntime(workspace, jail="bwrap", limits=SMALL)
    try:
        yield await started(runtime)
    finally:
        await runtime.close()


def docker_socket_paths() -> list[str]:
    paths = list(DOCKER_SOCKETS)
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        paths.append(host[len("unix://") :])
    return paths


# -- what the attacks must find (shared with the non-root run) ------------------------------


def check_postgres(results: list[dict[str, Any]]) -> None:
    assert results, "nothing was probed"
    for result in results:
        assert not result.get("exists_inside"), f"{result['target']} is visible inside"
        assert not result.get("connected"), f"{result['target']} accepted a connection: {result}"
        assert not answered(result)


def check_mount(result: dict[str, Any]) -> None:
    output = result["output"]
    assert "REMOUNTED" not in output and "MOUNTED_TMPFS" not in output, output
    assert "NEW_USERNS" not in output, output  # no nested user namespace either
    assert "CapEff:\t0000000000000000" in output, output
    assert result["after"] == result["before"]


def check_environment(result: dict[str, Any], passed: dict[str, str]) -> None:
    allowed = {*ENV_ALLOWED, "HOME", *passed, *jail_attacks.SHELL_OWN}
    names = set(result["names"])
    stray = {name for name in names - allowed if not name.startswith("LC_")}
    assert not stray, f"host variables leaked into the sandbox: {stray}"
    assert "CHRONICLE_LLM_API_KEY" not in result["env"] and "sk-fake" not in result["env"]
    for name, value in passed.items():
        assert f"{name}={value}" in result["env"]
    assert not result["token_in_proc"], "the token is in a process's environ or cmdline"
    assert result["token_file"] == [], "the token file is still there"
    assert result["server_memory"].strip() == "DENIED", "commands can read the server's memory"


def check_unreadable(shown: str) -> None:
    """What ``readable`` showed of /etc/shadow or a home: nothing of its contents."""
    assert not any(line.startswith("root:") for line in shown.splitlines()), shown
    assert "Permission denied" in shown or "No such file" in shown, shown


def check_memory(result: dict[str, Any]) -> None:
    assert "ALLOCATED" not in result["output"] and "exit=0" not in result["output"], result
    assert "alive" in result["after"]


def check_file_size(result: dict[str, Any]) -> None:
    assert result["size"] <= 1024**2, result
    assert "exit=153" in result["output"] or "File size limit" in result["output"], result


def check_cpu(result: dict[str, Any]) -> None:
    output = result["output"]
    assert "exit=152" in output or "exit=137" in output, output  # SIGXCPU, or SIGKILL after
    assert result["elapsed"] < 30, result
    own, server = result["limits"].splitlines()
    assert own.split()[-3:] == ["2", "3", "seconds"], own  # the command: 2 s, then killed
    assert "unlimited" in server, server  # the long-lived server has no CPU limit


def check_race(result: dict[str, Any]) -> None:
    assert result["swaps"] > 100, result  # the swap really ran the whole time
    assert result["counts"]["ok"] > 0 and result["counts"]["refused"] > 0, result
    assert result["leaks"] == [], result["leaks"][:3]
    assert result["outside_after"] == result["outside_before"], "a file was written outside"
    assert result["secret_after"] == jail_attacks.SECRET + "\n"


def check_fork_loop(result: dict[str, Any], limit: int) -> None:
    assert "LAUNCHED" in result["started"], result
    assert result["host_spawns_ok"], "the host could not start a process during the fork loop"
    assert 8 <= result["most_at_once"] <= limit, result  # it ran, and the limit held
    after = result["after"]
    assert "alive" in after or after.startswith(("[error]", "[Sandbox")), after
    assert result["left_after_close"] == 0, "processes of the fork loop outlived close()"


# -- as root (the suite's own user) ---------------------------------------------------------


async def test_postgres_is_unreachable_from_inside(
    jailed: LocalRuntime, pg_address: ServerAddress
) -> None:
    sockets = []
    if pg_address.host.startswith("/"):
        path = f"{pg_address.host}/.s.PGSQL.{pg_address.port}"
        assert answered(probe_unix(path)), "the probe must reach PostgreSQL from the host"
        sockets.append(path)
    tcp = listening_tcp()
    assert sockets or tcp, "no PostgreSQL socket and no listening port to probe"
    check_postgres(await jail_attacks.postgres(jailed, sockets, tcp))


async def test_mount_cannot_write_host_files(jailed: LocalRuntime, tmp_path: Path) -> None:
    host_file = tmp_path / "host-target.txt"
    write(host_file, "original\n")
    check_mount(await jail_attacks.mount_escape(jailed, host_file))


async def test_only_whitelisted_host_paths_are_visible(jailed: LocalRuntime) -> None:
    hidden = ["/run", "/var", "/sys", "/home", "/root", "/srv", "/mnt", "/media", "/boot"]
    hidden += [str(Path.home()), *docker_socket_paths()]
    assert await jail_attacks.present(jailed, hidden) == []
    wanted = ["/usr/bin", "/etc/passwd", "/bin/sh", "/dev/null", "/proc/self", "/tmp"]
    assert await jail_attacks.present(jailed, wanted) == wanted
    assert "Read-only file system" in await jail_attacks.run(jailed, "touch /etc/x /usr/x")


def etc_samples() -> tuple[Path, str, Path, set[str]]:
    """A file visible in the jail (and its first line), and a directory (and its entries)."""
    visible_file = Path(os.path.realpath("/etc/os-release"))
    directory = next(
        Path("/etc", name)
        for name in sorted(os.listdir("/etc"))
        if Path("/etc", name).is_dir() and not Path("/etc", name).is_symlink()
        and os.access(Path("/etc", name), os.R_OK | os.X_OK) and any(Path("/etc", name).iterdir())
    )  # fmt: skip
    return (
        visible_file,
        visible_file.read_text().splitlines()[0],
        directory,
        set(os.listdir(directory)),
    )


def write(path: Path, text: str) -> None:
    path.write_text(text)


def read(path: Path) -> str:
    return path.read_text()


def listed(ls_output: str) -> set[str]:
    """The names an ``ls -la`` printed (``.`` and ``..`` left out)."""
    names = {line.split()[-1] for line in ls_output.splitlines() if len(line.split()) > 8}
    return names - {".", ".."}


async def test_host_secrets_are_masked(workspace: Path) -> None:
    """/etc/shadow and friends are unreadable; ``hidden_paths`` masks a file or directory that
    would be visible (say a config file or data directory under /etc), also in the workspace."""
    visible_file, first_line, directory, entries = etc_samples()
    config = workspace / "config.toml"
    write(config, "llm_api_key = 'sk-fake-in-workspace'\n")
    targets = [str(visible_file), str(directory), str(config)]
    plain = await started(LocalRuntime(workspace, jail="bwrap"))
    try:
        before = await jail_attacks.readable(plain, targets)
    finally:
        await plain.close()
    assert first_line in before[str(visible_file)]  # visible unless masked
    assert listed(before[str(directory)]) == entries
    assert "sk-fake" in before[str(config)]
    hidden = [visible_file, directory, config]
    masked = await started(LocalRuntime(workspace, jail="bwrap", hidden_paths=hidden))
    try:
        shown = await jail_attacks.readable(masked, ["/etc/shadow", "/etc/gshadow", *targets])
    finally:
        await masked.close()
    check_unreadable(shown["/etc/shadow"])
    check_unreadable(shown["/etc/gshadow"])
    assert first_line not in shown[str(visible_file)]
    assert listed(shown[str(directory)]) == set()
    assert "sk-fake" not in shown[str(config)]
    assert read(config).startswith("llm_api_key")  # the host's file is untouched


async def test_environment_is_an_allow_list(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHRONICLE_LLM_API_KEY", "sk-fake-key-of-the-host")
    monkeypatch.setenv("CHRONICLE_SANDBOX_TOKEN", "not-for-the-sandbox")
    passed = {"CHRONICLE_PASSED": "passed-value"}
    runtime = await started(LocalRuntime(workspace, jail="bwrap", env=passed))
    try:
        check_environment(await jail_attacks.environment(runtime), passed)
    finally:
        await runtime.close()


async def test_network_only_when_asked(workspace: Path) -> None:
    """``network=True`` shares the host's interfaces (and its resolver configuration)."""
    count = "python3 -c 'import socket; print(len(socket.if_nameindex()))'"
    on_host = len(socket.if_nameindex())
    runtime = await started(LocalRuntime(workspace, jail="bwrap", network=True))
    try:
        assert (await jail_attacks.run(runtime, count)).strip() == str(on_host)
        assert "PRESENT" in await jail_attacks.run(
            runtime, "test -r /etc/resolv.conf && echo PRESENT"
        )
    finally:
        await runtime.close()
    runtime = await started(LocalRuntime(workspace, jail="bwrap"))
    try:
        assert (await jail_attacks.run(runtime, count)).strip() == "1"  # loopback only
    finally:
        await runtime.close()


def test_factory_passes_named_variables_limits_and_hidden_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NAMED_FOR_SANDBOX", "yes")
    monkeypatch.setenv("CHRONICLE_LLM_API_KEY", "sk-fake")
    settings = Settings(
        data_dir=tmp_path / "data",
        sandbox_env=["NAMED_FOR_SANDBOX"],
        sandbox_pids_limit=77,
        sandbox_memory="512m",
        sandbox_file_size_limit="2m",
        sandbox_cpu_seconds=9,
    )
    runtime = make_runtime(settings.runtime_config(), tmp_path / "ws", "s1", "local")
    assert isinstance(runtime, LocalRuntime)
    assert runtime.env == {"NAMED_FOR_SANDBOX": "yes"}
    assert runtime.limits == SandboxLimits(
        processes=77, memory_bytes=512 * 1024**2, file_size_bytes=2 * 1024**2, cpu_seconds=9
    )
    assert set(runtime.hidden_paths) == {default_config_file(), tmp_path / "data"}


@pytest.mark.parametrize("jail", ["bwrap", "none"])
async def test_symlink_swap_cannot_lead_file_actions_out(
    workspace: Path, tmp_path: Path, jail: str
) -> None:
    """``none`` runs the server unjailed: the path code alone must hold (as in Docker)."""
    runtime = await started(LocalRuntime(workspace, jail=jail))  # type: ignore[arg-type]
    try:
        check_race(await jail_attacks.symlink_race(runtime, tmp_path / "outside", seconds=10))
    finally:
        await runtime.close()


async def test_fork_loop_is_bounded(jailed: LocalRuntime) -> None:
    cgroup = jailed.cgroup
    if os.geteuid() == 0:
        # RLIMIT_NPROC does not apply to root: the cgroup must be what bounds it.
        assert cgroup is not None and cgroup.bounds_processes
    check_fork_loop(await jail_attacks.fork_loop(jailed), SMALL.processes or 0)
    if cgroup is not None:
        assert not any(directory.exists() for directory in cgroup.directories)


async def test_memory_hog_is_bounded(jailed: LocalRuntime) -> None:
    if os.geteuid() == 0:
        assert jailed.cgroup is not None and jailed.cgroup.bounds_memory
    check_memory(await jail_attacks.memory_hog(jailed))


async def test_file_size_is_bounded(jailed: LocalRuntime) -> None:
    check_file_size(await jail_attacks.file_size(jailed))


async def test_cpu_time_is_bounded_but_not_the_server(jailed: LocalRuntime) -> None:
    check_cpu(await jail_attacks.cpu_time(jailed))


async def test_leftovers_of_a_killed_owner_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An owner killed with SIGKILL cannot close its sandbox: the jail dies with it, and the
    next sandbox started removes its empty cgroup and its private socket directory."""
    owner = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import asyncio, json\n"
        "from app.runtime import LocalRuntime\n"
        "async def main():\n"
        f"    rt = LocalRuntime({str(tmp_path / 'ws1')!r}, jail='bwrap')\n"
        "    await rt.start(); await rt.wait_ready(30)\n"
        "    dirs = [str(d) for d in rt.cgroup.directories] if rt.cgroup else []\n"
        "    print(json.dumps([rt.process.pid, str(rt._private), dirs]), flush=True)\n"
        "    await asyncio.sleep(3600)\n"
        "asyncio.run(main())\n",
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
    )
    assert owner.stdout is not None
    jail_pid, private, cgroups = json.loads(await owner.stdout.readline())
    owner.kill()
    await owner.wait()
    await pid_ended(jail_pid, timeout=10, what="the jail (its owner was killed)")
    assert await asyncio.to_thread(os.path.exists, private)
    monkeypatch.setattr("app.runtime.local.runtime.STALE_AFTER", 3.0)
    monkeypatch.setattr("app.runtime.local.cgroup.STALE_AFTER", 3.0)
    await asyncio.sleep(3.5)  # the age that makes them stale (3 s): the time is the test
    runtime = await started(LocalRuntime(tmp_path / "ws2", jail="bwrap"))
    try:
        assert not await asyncio.to_thread(os.path.exists, private)
        for directory in cgroups:
            assert not await asyncio.to_thread(os.path.exists, directory)
    finally:
        await runtime.close()


async def test_opting_out_of_the_jail_warns(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="app.runtime.local.runtime"):
        runtime = await started(LocalRuntime(workspace, jail="none"))
    try:
        assert any("WITHOUT a jail" in record.getMessage() for record in caplog.records)
        assert "free" in await jail_attacks.run(runtime, "echo free")
    finally:
        await runtime.close()


async def test_root_is_read_only(local_runtime: LocalRuntime) -> None:
    result = await jail_attacks.run(local_runtime, "touch /usr/x; echo > inside.txt && echo wrote")
    assert "Read-only file system" in result and "wrote" in result


async def test_unconfined_when_asked(workspace: Path) -> None:
    runtime = await started(LocalRuntime(workspace, jail="none"))
    try:
        assert await jail_attacks.run(runtime, "echo free") == "free\n"
    finally:
        await runtime.close()


# -- as a non-root user -----------------------------------------------------------------


@pytest.fixture
def nonroot_base() -> Iterator[Path]:
    """A directory a non-root user can reach (pytest's own tmp dir is root's, mode 0700)."""
    base = Path(tempfile.mkdtemp(prefix="chronicle-nonroot-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_attacks_as_a_non_root_user(nonroot_base: Path, pg_address: ServerAddress) -> None:
    user = ensure_user(NONROOT_USER) if os.geteuid() == 0 else None
    prefix = as_user(user)
    workspace, outside = nonroot_base / "ws", nonroot_base / "outside"
    host_file = nonroot_base / "host-target.txt"
    workspace.mkdir()
    outside.mkdir()
    host_file.write_text("original\n")
    if user is not None:
        for path in (workspace, outside, host_file):
            os.chown(path, user.pw_uid, user.pw_gid)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(nonroot_base),
        "LANG": "C.UTF-8",
        "CHRONICLE_LLM_API_KEY": "sk-fake-key-of-the-host",
    }
    python, pythonpath = interpreter_for(prefix, env)
    sockets = [f"{pg_address.host}/.s.PGSQL.{pg_address.port}"]
    args = {
        "workspace": str(workspace),
        "outside": str(outside),
        "host_file": str(host_file),
        "unix": sockets if pg_address.host.startswith("/") else [],
        "absent": ["/run", "/var", "/sys", "/home", "/root", *docker_socket_paths()],
        "unreadable": ["/etc/shadow", "/root"],
        "race_seconds": 5,
    }
    script = str(REPO / "tests" / "support" / "nonroot_jail.py")
    finished = subprocess.run(
        [*prefix, python, script, json.dumps(args)],
        env={**env, "PYTHONPATH": pythonpath},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    result = json.loads(finished.stdout.strip().splitlines()[-1])
    assert result["uid"] != 0
    assert result["cgroup"] is False  # so every bound below comes from the rlimits
    check_environment(result["environment"], {"CHRONICLE_PASSED": "passed-value"})
    check_postgres(result["postgres"])
    check_mount(result["mount"])
    assert result["present"] == []
    for shown in result["readable"].values():
        check_unreadable(shown)
    check_memory(result["memory"])
    check_file_size(result["file_size"])
    check_cpu(result["cpu"])
    check_race(result["race"])
    check_fork_loop(result["fork_loop"], SMALL.processes or 0)
