"""How a Docker sandbox is made: the docker kind's part of ``RuntimeConfig``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import NoDecode

from app.runtime.docker.hosts import DockerHost, DockerTls, FilesMode, parse_hosts


class DockerConfig(BaseModel):
    """How a Docker sandbox is made and confined (``app.runtime.docker.hardening``)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, extra="forbid")

    base_image: str = "python:3.12-slim-bookworm"
    """Base of the sandbox image (any image with python3 and bash)."""
    network: bool = False
    """Commands may use the network (else the container has none)."""
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    """Host variables passed in by name (values: they may be secrets, so never in a repr)."""
    no_output_timeout: float = Field(default=10.0, gt=0)
    """Seconds without output before a command is reported as still running."""
    cpus: float = Field(default=2.0, gt=0)
    """CPUs of the sandbox (Docker's only: a local sandbox has none of its own)."""
    memory: str = "4g"
    """Memory limit as Docker writes it (also the swap limit: no swap beyond it)."""
    pids_limit: int = Field(default=1024, gt=0)
    """Processes and threads at once (bounds fork bombs)."""
    uid: int = Field(default=10001, gt=0)
    """The sandbox's uid and gid when Chronicle runs as root on a root-owned workspace."""
    disk_quota: str | None = "10g"
    """Writable-layer size (``storage_opt``) where the storage driver enforces one (else
    skipped, logged once); empty for none."""
    tmpfs_size: str = "1g"
    """Size of /tmp and of the home (tmpfs, in memory)."""
    heartbeat_interval: float = Field(default=30.0, gt=0)
    """Recorded on the container for the reaper: how often its owner touches it."""
    workspace_limit_mb: int | None = Field(default=2048, gt=0)
    """MB the sandbox may add to its (bind-mounted) workspace, which the writable layer's
    quota does not cover; the action server enforces it (None: no limit)."""
    hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """The pool of engines sandboxes run on (``CHRONICLE_DOCKER_HOSTS``, comma-separated:
    ``unix:///path``, ``tcp://HOST:PORT`` with TLS, ``ssh://USER@HOST``; ``?max_sandboxes=N``
    after one caps it). Empty: the one engine of the environment (``DOCKER_HOST``), as always."""
    host_max_sandboxes: int | None = Field(default=None, gt=0)
    """Sandboxes one engine of the pool may run when its entry sets no ``max_sandboxes``
    (None: its memory divided by ``sandbox_memory``)."""
    files: Literal["auto", "shared", "copied"] = "auto"
    """How a sandbox gets its workspace: ``shared``, bind mounts of the worker's directories
    (the engine sees the worker's files at the same paths); ``copied``, Docker volumes filled
    from the worker's workspace and copied back when the sandbox closes, the server reached
    through ``docker exec`` (an engine on another machine); ``auto``, shared for an engine
    on a Unix socket, copied for ``tcp://`` and ``ssh://``. A pool entry's ``?files=`` wins."""
    tls_cert: Path | None = None
    """Client certificate (PEM) for the ``tcp://`` engines of ``docker_hosts``."""
    tls_key: Path | None = None
    """The client certificate's private key (PEM)."""
    tls_ca: Path | None = None
    """The CA (PEM) that signed the ``tcp://`` engines' certificates (they are verified)."""

    @field_validator("hosts", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        """``CHRONICLE_DOCKER_HOSTS=unix:///a.sock,ssh://me@b`` as well as a TOML list."""
        if isinstance(value, str):
            return [entry.strip() for entry in value.split(",") if entry.strip()]
        return value

    @model_validator(mode="after")
    def _hosts_make_sense(self) -> DockerConfig:
        """Every entry an engine, and TLS complete where it is needed (an error says what
        is wrong, at start rather than at the first sandbox)."""
        given = [f for f in ("tls_cert", "tls_key", "tls_ca") if getattr(self, f) is not None]
        if given and len(given) < 3:
            missing = sorted({"tls_cert", "tls_key", "tls_ca"} - set(given))
            raise ValueError(
                f"docker_{given[0]} is set but not {', '.join('docker_' + m for m in missing)}: "
                "a TLS engine needs the client certificate, its key and the CA"
            )
        parse_hosts(self.hosts, self.tls)
        return self

    @property
    def tls(self) -> DockerTls | None:
        if self.tls_cert is None or self.tls_key is None or self.tls_ca is None:
            return None
        return DockerTls(cert=self.tls_cert, key=self.tls_key, ca=self.tls_ca)

    def files_for(self, host: DockerHost | None, base_url: str) -> FilesMode:
        """Whether the sandbox on ``host`` (None: the environment's engine, at ``base_url``)
        shares the worker's files or gets copies."""
        chosen = host.files if host is not None and host.files is not None else self.files
        if chosen != "auto":
            return chosen
        local = base_url.startswith(("unix://", "http+docker://localhost", "http+unix://"))
        return "shared" if local else "copied"

    def pool_hosts(self) -> tuple[DockerHost, ...]:
        """The pool's engines (empty: no pool, the environment's one engine)."""
        return parse_hosts(self.hosts, self.tls)
