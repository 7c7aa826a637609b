"""The Docker engines of a host pool (``sandbox hosts``, ``CHRONICLE_DOCKER_HOSTS``): what each
entry may say, and how a client of it is made.

An entry is a Unix socket (``unix:///var/run/docker.sock``), an engine over TCP with mutual
TLS (``tcp://10.0.0.5:2376``: the client certificate, its key and the CA of the
``docker_tls_*`` settings), or an engine reached through SSH (``ssh://user@host``, with the
``ssh`` program and its configuration, as ``docker -H ssh://`` does). Plain TCP is refused:
an engine's API is root on its machine. ``?max_sandboxes=N`` after an entry caps what that
host runs (else ``docker_host_max_sandboxes``, else the engine's memory: see ``placement``);
``?files=shared|copied`` says whether its sandboxes see the worker's files or get copies
(``DockerConfig.files``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from app.errors import ChronicleError

SCHEMES = ("unix", "tcp", "ssh")
#: Whether a sandbox shares the worker's files or gets copies (``DockerConfig.files``).
FilesMode = Literal["shared", "copied"]
FILES_MODES = ("auto", "shared", "copied")
#: Seconds a call to an engine may take before the host counts as unreachable.
ENGINE_TIMEOUT = 10


class DockerHostError(ChronicleError, ValueError):
    """An entry of ``docker_hosts`` (or its TLS files) that cannot name an engine."""


class DockerTls(BaseModel):
    """The client certificate, key and CA that every ``tcp://`` engine is reached with."""

    model_config = ConfigDict(frozen=True)

    cert: Path
    key: Path
    ca: Path

    def problems(self) -> list[str]:
        """What is wrong with the files (missing, not files), in words."""
        found = []
        for name, path in (("docker_tls_cert", self.cert), ("docker_tls_key", self.key),
                           ("docker_tls_ca", self.ca)):  # fmt: skip
            if not path.is_file():
                found.append(f"{name} = {str(path)!r} is not a readable file")
        return found


class DockerHost(BaseModel):
    """One engine of the pool: its URL (the host's name in labels, logs and events) and the
    most sandboxes it may run (None: decided by the pool's settings and the engine)."""

    model_config = ConfigDict(frozen=True)

    url: str
    max_sandboxes: int | None = Field(default=None, gt=0)
    files: Literal["auto", "shared", "copied"] | None = None

    @property
    def scheme(self) -> str:
        return self.url.split("://", 1)[0]


def parse_host(entry: str) -> DockerHost:
    """An entry of ``docker_hosts`` as a ``DockerHost``; ``DockerHostError`` saying what is
    wrong with it."""
    text = entry.strip()
    parts = urlsplit(text)
    if parts.scheme not in SCHEMES or "://" not in text:
        raise DockerHostError(
            f"docker_hosts entry {text!r} is no engine: write unix:///path/docker.sock, "
            "tcp://HOST:PORT (with docker_tls_cert, docker_tls_key and docker_tls_ca) or "
            "ssh://USER@HOST"
        )
    if parts.scheme == "unix" and not parts.path:
        raise DockerHostError(f"docker_hosts entry {text!r} names no socket path")
    if parts.scheme in ("tcp", "ssh") and not parts.hostname:
        raise DockerHostError(f"docker_hosts entry {text!r} names no host")
    if parts.scheme == "tcp" and parts.port is None:
        raise DockerHostError(
            f"docker_hosts entry {text!r} names no port (Docker's TLS port is 2376)"
        )
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - {"max_sandboxes", "files"})
    if unknown:
        raise DockerHostError(
            f"docker_hosts entry {text!r}: unknown option {', '.join(unknown)} (max_sandboxes "
            "and files are known)"
        )
    files = query.get("files", [None])[-1]
    if files is not None and files not in FILES_MODES:
        raise DockerHostError(
            f"docker_hosts entry {text!r}: files must be shared, copied or auto, not {files!r}"
        )
    limit: int | None = None
    if "max_sandboxes" in query:
        value = query["max_sandboxes"][-1]
        if not value.isdigit() or int(value) < 1:
            raise DockerHostError(
                f"docker_hosts entry {text!r}: max_sandboxes must be a whole number above 0"
            )
        limit = int(value)
    return DockerHost(
        url=text.split("?", 1)[0].split("#", 1)[0],
        max_sandboxes=limit,
        files=files,  # type: ignore[arg-type]  # checked against FILES_MODES above
    )


def parse_hosts(entries: list[str], tls: DockerTls | None) -> tuple[DockerHost, ...]:
    """Every entry parsed; an engine named twice, or a ``tcp://`` one without usable TLS
    files, is an error that says so."""
    hosts = tuple(parse_host(entry) for entry in entries if entry.strip())
    urls = [host.url for host in hosts]
    twice = sorted({url for url in urls if urls.count(url) > 1})
    if twice:
        raise DockerHostError(f"docker_hosts names {', '.join(twice)} more than once")
    if any(host.scheme == "tcp" for host in hosts):
        if tls is None:
            raise DockerHostError(
                "a tcp:// engine in docker_hosts needs TLS: set docker_tls_cert, docker_tls_key "
                "and docker_tls_ca (CHRONICLE_DOCKER_TLS_CERT, ...) to the client certificate, "
                "its key and the CA that signed the engine's certificate"
            )
        problems = tls.problems()
        if problems:
            raise DockerHostError("; ".join(problems))
    return hosts


def connect(host: DockerHost, tls: DockerTls | None):  # type: ignore[no-untyped-def]
    """A ``docker.DockerClient`` of ``host`` (blocking: call it in a thread). Nothing is sent
    yet; the first call tells whether the engine answers."""
    import docker
    import docker.tls

    if host.scheme == "unix":
        return docker.DockerClient(base_url=host.url, timeout=ENGINE_TIMEOUT)
    if host.scheme == "ssh":
        return docker.DockerClient(base_url=host.url, use_ssh_client=True, timeout=ENGINE_TIMEOUT)
    assert tls is not None  # parse_hosts refuses a tcp:// engine without it
    config = docker.tls.TLSConfig(
        client_cert=(str(tls.cert), str(tls.key)), ca_cert=str(tls.ca), verify=True
    )
    # requests lets REQUESTS_CA_BUNDLE (set on many machines) replace a session's CA, so the
    # engine would be checked against the system's CAs instead of docker_tls_ca: the API
    # version is asked with the CA given per request, and the client ignores the environment.
    client = docker.DockerClient(
        base_url=host.url, tls=config, timeout=ENGINE_TIMEOUT, version=_api_version(host, tls)
    )
    client.api.trust_env = False
    return client


def _api_version(host: DockerHost, tls: DockerTls) -> str:
    """The API version of a ``tcp://`` engine, asked over mutual TLS (blocking)."""
    import requests

    address = host.url.removeprefix("tcp://").rstrip("/")
    answer = requests.get(
        f"https://{address}/version",
        cert=(str(tls.cert), str(tls.key)),
        verify=str(tls.ca),
        timeout=ENGINE_TIMEOUT,
    )
    answer.raise_for_status()
    return str(answer.json()["ApiVersion"])
