"""Where the host pool puts a sandbox (most free capacity), and the settings that name the
pool's engines: pure code."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from app.config import Settings
from app.runtime.docker.hosts import DockerHostError, DockerTls, parse_host, parse_hosts
from app.runtime.docker.placement import HostLoad, capacity_of, choose_host, why_no_host

GIB = 1 << 30


def test_capacity_is_the_set_maximum_else_what_memory_holds() -> None:
    assert capacity_of(3, 64 * GIB, 4 * GIB) == 3
    assert capacity_of(None, 64 * GIB, 4 * GIB) == 16
    assert capacity_of(None, 3 * GIB, 4 * GIB) == 1  # a small host still runs one
    assert capacity_of(None, 8 * GIB, 0) == 8  # no memory limit: a GiB each


def test_the_host_with_most_free_capacity_wins_and_a_tie_goes_to_the_first_listed() -> None:
    a = HostLoad("unix:///a", True, capacity=4, running=3)
    b = HostLoad("unix:///b", True, capacity=8, running=5)
    c = HostLoad("unix:///c", True, capacity=2, running=0)
    assert choose_host([a, b, c]) == b  # 1, 3, 2 free
    assert choose_host([c, HostLoad("unix:///d", True, 5, 3)]) == c  # 2 and 2: first listed
    assert HostLoad("unix:///e", True, capacity=2, running=5).free == 0  # over, not negative


def test_an_unreachable_or_full_host_is_never_chosen() -> None:
    gone = HostLoad("ssh://me@gone", False, capacity=100, problem="connection refused")
    full = HostLoad("unix:///full", True, capacity=2, running=2)
    assert gone.free == 0
    assert choose_host([gone, full]) is None
    why = why_no_host([gone, full])
    assert "ssh://me@gone is unreachable (connection refused)" in why
    assert "unix:///full runs 2 of 2" in why
    assert choose_host([]) is None and "no Docker hosts" in why_no_host([])


def test_entries_name_engines_with_an_optional_cap() -> None:
    host = parse_host(" unix:///run/docker2.sock?max_sandboxes=3 ")
    assert (host.url, host.max_sandboxes, host.scheme) == ("unix:///run/docker2.sock", 3, "unix")
    assert parse_host("ssh://me@build-3").max_sandboxes is None
    assert parse_host("tcp://10.0.0.5:2376").scheme == "tcp"


def test_an_engine_elsewhere_gets_copies_unless_its_entry_or_the_setting_says_otherwise() -> None:
    """``auto``: an engine on a Unix socket shares the worker's files, one over TCP or SSH
    (another machine) gets copies; an entry's ``?files=`` wins over ``docker_files``."""
    docker = Settings().sandbox.docker
    for entry, files in [
        ("unix:///run/docker2.sock", "shared"),
        ("tcp://10.0.0.5:2376", "copied"),
        ("ssh://me@build-3", "copied"),
        ("ssh://me@build-3?files=shared", "shared"),
        ("unix:///run/docker2.sock?files=copied", "copied"),
    ]:
        host = parse_host(entry)
        assert docker.files_for(host, host.url) == files, entry
    assert docker.files_for(None, "http+docker://localhost") == "shared"  # DOCKER_HOST unset
    assert docker.files_for(None, "https://10.0.0.5:2376") == "copied"
    copied = Settings(docker_files="copied").sandbox.docker
    assert copied.files_for(None, "http+docker://localhost") == "copied"
    assert copied.files_for(parse_host("unix:///b?files=shared"), "unix:///b") == "shared"


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("/var/run/docker.sock", "is no engine"),
        ("http://h:2375", "is no engine"),
        ("unix://", "names no socket path"),
        ("ssh://", "names no host"),
        ("tcp://h", "names no port"),
        ("unix:///a.sock?max=3", "unknown option max"),
        ("unix:///a.sock?max_sandboxes=0", "whole number above 0"),
        ("ssh://me@b?files=rsync", "files must be shared, copied or auto"),
    ],
)
def test_a_wrong_entry_says_what_is_wrong(entry: str, says: str) -> None:
    with pytest.raises(DockerHostError, match=says):
        parse_host(entry)


def test_a_tcp_engine_needs_tls_files_that_exist(tmp_path: Path) -> None:
    with pytest.raises(DockerHostError, match="needs TLS: set docker_tls_cert"):
        parse_hosts(["tcp://h:2376"], None)
    tls = DockerTls(cert=tmp_path / "cert.pem", key=tmp_path / "key.pem", ca=tmp_path / "ca.pem")
    with pytest.raises(DockerHostError, match=r"docker_tls_cert = .* is not a readable file"):
        parse_hosts(["tcp://h:2376"], tls)
    for path in (tls.cert, tls.key, tls.ca):
        path.write_text("pem")
    assert [h.url for h in parse_hosts(["tcp://h:2376", "unix:///b"], tls)] == [
        "tcp://h:2376",
        "unix:///b",
    ]
    with pytest.raises(DockerHostError, match="more than once"):
        parse_hosts(["unix:///b", "unix:///b?max_sandboxes=2"], None)


def test_the_settings_read_the_pool_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CHRONICLE_CONFIG", str(tmp_path / "none.toml"))
    assert Settings().sandbox.docker.hosts == []  # unset: the one engine, as before
    monkeypatch.setenv("CHRONICLE_DOCKER_HOSTS", "unix:///a.sock?max_sandboxes=2, ssh://me@b")
    monkeypatch.setenv("CHRONICLE_DOCKER_HOST_MAX_SANDBOXES", "6")
    docker = Settings().sandbox.docker
    assert [h.url for h in docker.pool_hosts()] == ["unix:///a.sock", "ssh://me@b"]
    assert docker.host_max_sandboxes == 6
    monkeypatch.setenv("CHRONICLE_DOCKER_HOSTS", "tcp://h:2376")
    monkeypatch.setenv("CHRONICLE_DOCKER_TLS_CERT", str(tmp_path / "cert.pem"))
    with pytest.raises(ValidationError, match="docker_tls_cert is set but not docker_tls_ca"):
        Settings()
    monkeypatch.setenv("CHRONICLE_DOCKER_HOSTS", "docker.example:2376")
    monkeypatch.delenv("CHRONICLE_DOCKER_TLS_CERT")
    with pytest.raises(ValidationError, match="is no engine"):
        Settings()
