"""Settings from ``CHRONICLE_*`` environment variables and an optional TOML file.

Precedence: explicit arguments > environment > the TOML file > defaults. The TOML file is
``$CHRONICLE_CONFIG`` if set, else ``config.toml`` in the user config directory.

Only sessions and above (sessions, evaluation, server, cli) read ``Settings``; every lower
package takes a small config object of its own, which the builders at the end of
``Settings`` make (``store_config()``, ``runtime_config()``, ...). See docs/architecture.md.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Self, cast

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from app.config.flat import Flat, FlatEnvSource, FlatNames, NestedSource
from app.events.masking import SecretMasker, environment_secrets, is_secret_name, url_secrets
from app.llm.config import LlmSettings
from app.projections.config import ProjectionsConfig
from app.runtime.config import DockerConfig, ExecutorConfig, LocalConfig, RuntimeConfig
from app.runtime.kinds import DEFAULT as DEFAULT_KIND
from app.runtime.kinds import RuntimeKind
from app.runtime.local.limits import SandboxLimits
from app.store.config import StoreConfig
from app.tools.config import McpServerConfig

if TYPE_CHECKING:
    from app.store.config import DatabaseConfig

APP_NAME = "chronicle"


def default_config_file() -> Path:
    explicit = os.environ.get("CHRONICLE_CONFIG")
    if explicit:
        return Path(explicit)
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


class GatewayLimits(BaseModel):
    """Limits on an external agent's gateway calls, for one user or one session (None: no
    limit). What each means and how it is counted: app/external/limits.py, docs/gateway.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_cost_usd: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="refuse calls once this is spent"
    )
    max_calls: int | None = Field(default=None, ge=0, description="calls made, at most")
    models: tuple[str, ...] | None = Field(
        default=None,
        description="names or patterns ('gpt-4o*') of the upstream models that may answer",
    )
    rate_per_minute: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, description="calls per minute, at most"
    )


class GatewayLimitDefaults(BaseModel):
    """The deployment's limits: every user's (unless an admin set the user's own) and every
    session's (a session's own limits only tighten them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user: GatewayLimits = GatewayLimits()
    session: GatewayLimits = GatewayLimits()


@dataclass(frozen=True)
class Feeds:
    """Marks a setting as the value of ``model``'s ``field`` (kept in the field's metadata,
    which pydantic leaves alone): ``Settings.feeding(model)`` builds that model's values."""

    model: type[BaseModel]
    field: str


def declared_by(
    model: type[BaseModel],
    field: str,
    *also: tuple[type[BaseModel], str],
    description: str | None = None,
) -> Any:
    """A setting declared once, by the component config field it feeds: its default and
    bounds are that field's (and its description, unless a user-facing one is given); it
    feeds the fields in ``also`` too, whose defaults must agree
    (tests/unit/test_config_objects.py)."""
    source = model.model_fields[field]
    info = FieldInfo.merge_field_infos(source, description=description or source.description)
    info.metadata = [*info.metadata, Feeds(model, field), *(Feeds(m, f) for m, f in also)]
    return info


class Settings(BaseSettings):
    """Everything Chronicle can be configured with. Field ``x`` is ``CHRONICLE_X`` in the env."""

    # Unknown names are refused by ``_known_names``, not by extra="forbid", which pydantic's
    # mypy plugin would read as "no keyword but the fields", refusing the flat names.
    model_config = SettingsConfigDict(env_prefix="CHRONICLE_", extra="ignore")

    database_url: str | None = Field(
        default=None,
        description="PostgreSQL URL; unset means an embedded PostgreSQL in data_dir",
    )
    owner_database_url: str | None = Field(
        default=None,
        description="URL of the database owner's login (a member of chronicle_owner, e.g. the "
        "role that migrates) for `chronicle db migrate` and the `users` and `tokens` commands, "
        "the only ones that may make an admin or an admin's token; never give it to the server. "
        "Unset: database_url, or the embedded server's superuser",
    )
    analyst_database_url: str | None = Field(
        default=None,
        description="URL of a login in chronicle_analyst (read-only) for `chronicle sql` and "
        "`chronicle export --view`; unset: the embedded server's chronicle_analyst login",
    )
    data_dir: Path = Field(default_factory=default_data_dir)
    anchor_key_file: Path | None = Field(
        default=None,
        description="Ed25519 private key (PEM) that signs anchors; unset: generated in "
        "data_dir/secrets on first use",
    )
    max_event_bytes: int = declared_by(
        StoreConfig,
        "max_event_bytes",
        description="per event payload, after its long strings are moved to blobs",
    )
    blob_threshold_bytes: int = declared_by(
        StoreConfig,
        "blob_threshold_bytes",
        description="a payload string longer than this (UTF-8 bytes) is stored once in the "
        "blobs table and referenced from the payload",
    )
    pool_min_size: int = declared_by(StoreConfig, "pool_min_size")
    pool_max_size: int = declared_by(StoreConfig, "pool_max_size")
    database_statement_timeout: float = declared_by(
        StoreConfig,
        "statement_timeout",
        description="seconds one statement of Chronicle's own database connections may run "
        "before PostgreSQL cancels it (0: no limit); archive, import, verify --all and "
        "projection rebuilds run without it",
    )
    poll_interval: float = declared_by(
        StoreConfig,
        "poll_interval",
        description="seconds between fallback polls of a quiet subscription",
    )
    projections_inline: bool = declared_by(
        ProjectionsConfig,
        "inline",
        description="keep the projections (session_state) current inside `chronicle run`; "
        "off when `chronicle projections run` runs them in a process of their own",
    )
    projections_standby_interval: float = declared_by(
        ProjectionsConfig,
        "standby_interval",
        description="seconds between a waiting projection runner's attempts to take over",
    )
    projections_batch_size: int = declared_by(
        ProjectionsConfig,
        "batch_size",
        description="most events a projection runner applies in one transaction",
    )

    # -- workers (app/sessions/worker.py) ----------------------------------------------------
    worker_lease_duration: float = Field(
        default=30.0,
        gt=0,
        description="seconds a worker's lease on a session lasts unless renewed: a worker that "
        "dies (kill -9) is replaced by another within this",
    )
    worker_heartbeat_interval: float = Field(
        default=10.0, gt=0, description="seconds between a worker's lease renewals"
    )
    worker_max_sessions: int = Field(
        default=4, ge=1, description="sessions one worker runs at once"
    )
    worker_max_attempts: int = Field(
        default=3,
        ge=1,
        description="claims of a session whose workers all died running it before one gives "
        "up on it (recorded as an error in its log)",
    )
    worker_refused_backoff: float = Field(
        default=2.0,
        gt=0,
        description="seconds before a session whose run the database refused for now (its disk "
        "full, out of memory or connections) is tried again; doubled at each refusal in a row, "
        "up to worker_refused_backoff_max",
    )
    worker_refused_backoff_max: float = Field(
        default=60.0, gt=0, description="the longest wait between two tries of a refused run"
    )
    worker_reap_interval: float = Field(
        default=600.0, gt=0, description="seconds between a worker's sweeps for stale sandboxes"
    )
    worker_sweep_interval: float = Field(
        default=30.0,
        gt=0,
        description="seconds between a worker's sweeps for API evaluation runs a dead worker "
        "left unfinished (a trial ended but unscored, or the next trials not queued)",
    )
    worker_drain_timeout: float = Field(
        default=25.0,
        gt=0,
        description="seconds a worker stopped by SIGTERM waits for its sessions' steps in "
        "flight; then it stops them (what is still running is reported interrupted when "
        "another worker resumes the session)",
    )

    # -- model (CHRONICLE_LLM_*, or an [llm] table) -----------------------------------------
    llm: Annotated[LlmSettings, Flat.named("llm_")] = Field(default_factory=LlmSettings)

    # -- model gateway for agents Chronicle does not run (app/external, docs/gateway.md) ----
    gateway_model_map: dict[str, str] = Field(
        default_factory=dict,
        description="model names (or patterns: '*', 'gpt-*') an agent may send to the "
        'gateway, mapped to the litellm model that answers them, e.g. {"*": '
        '"openai/gpt-4o-mini"}; the most specific pattern wins',
    )
    gateway_models: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="model names (or patterns) an agent may ask the gateway for as they are "
        "(litellm names); the server's own llm_model is always allowed",
    )
    gateway_max_body_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        description="largest request body the model gateway (/v1/...) reads; more is 413",
    )
    gateway_max_concurrency: int = Field(
        default=64, ge=1, description="gateway calls in flight per upstream model"
    )
    gateway_limits: GatewayLimitDefaults = Field(
        default_factory=GatewayLimitDefaults,
        description="limits of every user's and every session's gateway calls (cost, calls, "
        'models, rate), e.g. {"session": {"max_calls": 500}, "user": {"max_cost_usd": 20}}',
    )

    # -- tools ---------------------------------------------------------------------------
    mcp_servers: list[McpServerConfig] = Field(
        default_factory=list, description="MCP servers every session starts ([[mcp_servers]])"
    )

    # -- sandboxes -----------------------------------------------------------------------
    runtime: RuntimeKind = Field(default=DEFAULT_KIND, description="default runtime")
    sandbox_network: bool = declared_by(
        DockerConfig,
        "network",
        (LocalConfig, "network"),
        description="let commands in a sandbox use the network",
    )
    sandbox_env: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="names of host environment variables passed into sandboxes (none else is)",
    )
    sandbox_base_image: str = declared_by(
        DockerConfig,
        "base_image",
        description="base of the Docker sandbox image (any image with python3 and bash)",
    )
    sandbox_cpus: float = declared_by(DockerConfig, "cpus", description="CPUs of a Docker sandbox")
    sandbox_memory: str = declared_by(
        DockerConfig, "memory", description="memory limit of a sandbox as Docker writes it, e.g. 4g"
    )
    sandbox_pids_limit: int = declared_by(
        DockerConfig, "pids_limit", (SandboxLimits, "processes"), description="bounds fork bombs"
    )
    sandbox_uid: int = declared_by(
        DockerConfig,
        "uid",
        (LocalConfig, "uid"),
        description="uid (and gid) of sandboxes (Docker and the local jail) and of a fork's "
        "restore when Chronicle runs as root and the workspace is root's or new; such a "
        "workspace's root-owned files are chowned to it once",
    )
    sandbox_disk_quota: str | None = declared_by(
        DockerConfig,
        "disk_quota",
        description="Docker writable-layer size limit (storage_opt size) where the storage "
        "driver enforces one (else skipped, logged once); empty for none",
    )
    sandbox_tmpfs_size: str = declared_by(
        DockerConfig,
        "tmpfs_size",
        description="size of a Docker sandbox's /tmp and home (tmpfs, in memory)",
    )
    sandbox_ready_timeout: float = declared_by(
        RuntimeConfig,
        "ready_timeout",
        (ExecutorConfig, "ready_timeout"),
        description="seconds a starting (or restarted) sandbox may take to answer",
    )
    workspace_snapshot_max_bytes: int = Field(
        default=10 * 1024 * 1024,
        ge=0,
        description="contents a session's workspace.snapshot (and workspace.diff) keeps at "
        "most; a file that does not fit what is left is named as skipped",
    )
    workspace_snapshot_timeout: float = Field(
        default=60.0, gt=0, description="seconds each git command of a workspace recording may take"
    )
    sandbox_no_output_timeout: float = declared_by(
        DockerConfig,
        "no_output_timeout",
        (LocalConfig, "no_output_timeout"),
        description="seconds without output before a command is 'still running'",
    )
    action_timeouts: dict[str, float] = Field(
        default_factory=lambda: {
            "run": 120.0,
            "file.read": 30.0,
            "file.write": 30.0,
            "file.edit": 30.0,
        },
        description="seconds an action of each kind may take when it sets no timeout itself",
    )
    sandbox_pool_size: int = declared_by(
        RuntimeConfig, "pool_size", description="warm sandboxes kept started"
    )
    sandbox_heartbeat_interval: float = declared_by(
        DockerConfig,
        "heartbeat_interval",
        (ExecutorConfig, "heartbeat_interval"),
        description="seconds between the heartbeats a sandbox's owner sends it",
    )
    sandbox_max_restarts: int = declared_by(
        ExecutorConfig,
        "max_restarts",
        description="times one run restarts a sandbox that died (failed its liveness check) "
        "before the run ends in error; 0 ends it at the first death",
    )
    sandbox_reap_after: float = Field(
        default=7200.0, gt=0, description="seconds without a heartbeat before a sandbox is reaped"
    )
    sandbox_file_size_limit: str | None = Field(
        default="10g",
        description="largest file a command in a local sandbox may write, e.g. 10g; empty for none",
    )
    sandbox_cpu_seconds: int | None = declared_by(
        SandboxLimits,
        "cpu_seconds",
        description="CPU seconds each process in a local sandbox may use",
    )
    sandbox_workspace_limit_mb: int | None = declared_by(
        DockerConfig,
        "workspace_limit_mb",
        (SandboxLimits, "workspace_mb"),
        description="MB a sandbox may add to its workspace beyond what it held when the sandbox "
        "started (local and Docker): a command that grows it past is stopped, a file write "
        "refused; empty for none",
    )

    # -- access service (chronicle serve) -----------------------------------------------
    workspace_roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="directories under which an API client may name an existing workspace "
        "(a directory or git repository); unset: only fresh workspaces under data_dir",
    )
    server_rate_limit: int = Field(
        default=600, ge=1, description="requests per minute one token (or one address) may make"
    )
    gateway_rate_limit: int = Field(
        default=6000,
        ge=1,
        description="model calls per minute one token may make through the model gateway "
        "(/v1/...), counted apart from server_rate_limit",
    )
    server_max_body_bytes: int = Field(
        default=1024 * 1024, ge=1024, description="largest request body the API reads"
    )
    server_max_active_sessions: int = Field(
        default=5, ge=1, description="sessions one user may have working (or starting) at once"
    )
    server_login_hours: float = Field(
        default=12.0, gt=0, description="lifetime of a browser login's session cookie"
    )
    server_max_streams_per_user: int = Field(
        default=20, ge=1, description="live event streams one user may hold open in one API process"
    )
    server_stream_buffer_events: int = Field(
        default=1000,
        ge=1,
        description="events a live stream holds for a client not yet sent; when it stays full "
        "for server_stream_stall_seconds the client is told where to resume and closed",
    )
    server_stream_stall_seconds: float = Field(
        default=10.0,
        gt=0,
        description="seconds a stream client's full buffer may wait for it before it is closed",
    )
    server_stream_keepalive_seconds: float = Field(
        default=15.0, gt=0, description="seconds between SSE keep-alive comments on a quiet stream"
    )
    server_token_cache_seconds: float = Field(
        default=5.0,
        ge=0,
        le=300,
        description="seconds an API process remembers a live Bearer token instead of asking "
        "the database on every request; a token revoked elsewhere (chronicle tokens revoke) "
        "stops working within this many seconds (0: check every request)",
    )
    server_shutdown_grace: int = Field(
        default=3,
        ge=1,
        description="seconds a server stopped by SIGTERM lets the requests in flight finish "
        "before it cancels them (a client that never finishes sending its request would "
        "otherwise hold the exit); live streams end at once",
    )
    server_header_timeout: float = Field(
        default=10.0,
        gt=0,
        description="seconds a client has to send a request's line and headers (from the "
        "connection's opening, or the end of the previous response); then it is answered 408 "
        "and closed",
    )
    server_body_timeout: float = Field(
        default=30.0,
        gt=0,
        description="seconds a client has to send a request's whole body once its headers "
        "arrived; then it is answered 408 and closed (responses and streams are never timed)",
    )
    server_write_timeout: float = Field(
        default=60.0,
        gt=0,
        description="seconds a response (or stream) whose write buffer is full may wait for "
        "the client to read any of it; then the connection is dropped (a client that never "
        "reads would otherwise hold its connection for good)",
    )
    server_max_connections: int = Field(
        default=1000,
        ge=1,
        description="connections one API process holds open at once (streams included); one "
        "more is answered 503 with Retry-After at once, and those open carry on",
    )
    server_forwarded_allow_ips: str = Field(
        default="",
        description="addresses of the proxies in front whose X-Forwarded-For and "
        "X-Forwarded-Proto are believed (comma-separated, as uvicorn's --forwarded-allow-ips; "
        "'*': any); empty: none, the peer's own address is the client's (for the failure "
        "limit, logins and the audit trail)",
    )
    server_max_connections_per_address: int = Field(
        default=0,
        ge=0,
        description="connections one client address (an IPv6 /64) may hold open at once; one "
        "more is answered 503 at once (0: half of server_max_connections); the proxies "
        "server_forwarded_allow_ips names are not limited",
    )
    server_secure_cookies: bool = Field(
        default=False,
        description="mark the login cookies Secure (set it when clients reach the API over "
        "HTTPS through a proxy; a request that arrives over HTTPS gets them Secure anyway)",
    )
    server_auth_failures: int = Field(
        default=20,
        ge=1,
        description="refused credentials (unknown tokens, ended logins, wrong sign-in codes) "
        "one client address may present a minute in one API process; past it its requests "
        "with credentials are answered 429 with Retry-After",
    )
    server_login_code_minutes: float = Field(
        default=10.0,
        gt=0,
        le=24 * 60,
        description="lifetime of a sign-in link's one-time code (chronicle login-link)",
    )

    @field_validator("workspace_roots", mode="before")
    @classmethod
    def _paths_list(cls, value: object) -> object:
        """``CHRONICLE_WORKSPACE_ROOTS=/srv/repos:/home/me/src`` as well as a TOML list."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(os.pathsep) if part.strip()]
        return value

    @field_validator("gateway_models", mode="before")
    @classmethod
    def _models_list(cls, value: object) -> object:
        """``CHRONICLE_GATEWAY_MODELS=gpt-4o,claude-*`` as well as a TOML list."""
        if isinstance(value, str):
            return [name.strip() for name in value.split(",") if name.strip()]
        return value

    @field_validator("sandbox_env", mode="before")
    @classmethod
    def _names_list(cls, value: object) -> object:
        """``CHRONICLE_SANDBOX_ENV=GITHUB_TOKEN,NPM_TOKEN`` as well as a TOML list."""
        if isinstance(value, str):
            return [name.strip() for name in value.split(",") if name.strip()]
        return value

    @model_validator(mode="before")
    @classmethod
    def _nested_and_known(cls, values: object) -> object:
        """Flat names nested here too (for ``model_validate``, which reads no source), and a
        name that is no setting (a typo in the file, an argument) an error naming it, with
        the settings it may have meant."""
        if not isinstance(values, Mapping):
            return values
        names = flat_names(cls)
        nested = names.nest(values)
        unknown = [key for key in nested if key not in cls.model_fields]
        if unknown:
            known = [*names.every, *names.groups]
            problems = (f"{name} is no setting{_did_you_mean(name, known)}" for name in unknown)
            raise ValueError("; ".join(problems))
        return nested

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> Settings:
        if self.worker_heartbeat_interval >= self.worker_lease_duration:
            raise ValueError(
                f"worker_heartbeat_interval ({self.worker_heartbeat_interval} s) must be shorter "
                f"than worker_lease_duration ({self.worker_lease_duration} s), or leases expire "
                "while their workers run them"
            )
        return self

    def known_secrets(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``{value: name}`` of every secret this deployment knows, for masking the log.

        The model key, credentials in the configured URLs, MCP servers' environments and
        every environment variable named like a secret (KEY, TOKEN, SECRET, PASSWORD).
        """
        environ = os.environ if environ is None else environ
        found = environment_secrets(environ)
        if self.llm.api_key is not None:
            found[self.llm.api_key.get_secret_value()] = "CHRONICLE_LLM_API_KEY"
        found.update(url_secrets("CHRONICLE_DATABASE_URL", self.database_url))
        found.update(url_secrets("CHRONICLE_ANALYST_DATABASE_URL", self.analyst_database_url))
        found.update(url_secrets("CHRONICLE_OWNER_DATABASE_URL", self.owner_database_url))
        found.update(url_secrets("CHRONICLE_LLM_BASE_URL", self.llm.base_url))
        for server in self.mcp_servers:
            found.update(url_secrets(f"mcp_servers.{server.name}.url", server.url))
            for name, value in server.env.items():
                if is_secret_name(name):
                    found[value] = f"mcp_servers.{server.name}.env.{name}"
        return found

    def masker(self, environ: Mapping[str, str] | None = None) -> SecretMasker:
        """The masker every event passes through before it is recorded."""
        return SecretMasker(self.known_secrets(environ))

    def sandbox_environment(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The host variables the user named in ``sandbox_env`` (missing ones are skipped)."""
        environ = os.environ if environ is None else environ
        return {name: environ[name] for name in self.sandbox_env if name in environ}

    # -- the lower packages' config objects ------------------------------------------------
    # Imported when built: the runtime's pulls in the docker SDK, which quick commands skip.

    def store_config(self, *, long_running: bool = False) -> StoreConfig:
        """``long_running``: for a command whose statements may legitimately run for long
        (archive, import, ``verify --all``, a rebuild): no statement timeout."""
        values = self.feeding(StoreConfig)
        if long_running:
            values["statement_timeout"] = 0
        return StoreConfig(**values)

    def database_config(self) -> DatabaseConfig:
        from app.store.config import DatabaseConfig

        return DatabaseConfig(
            database_url=self.database_url,
            data_dir=self.data_dir,
            analyst_database_url=self.analyst_database_url,
            owner_database_url=self.owner_database_url,
        )

    def feeding(self, model: type[BaseModel]) -> dict[str, Any]:
        """The values of ``model``'s fields that settings feed (``declared_by``)."""
        return {
            feed.field: getattr(self, name)
            for name, info in type(self).model_fields.items()
            for feed in info.metadata
            if isinstance(feed, Feeds) and feed.model is model
        }

    def local_config(self, environ: Mapping[str, str] | None = None) -> LocalConfig:
        """The local sandbox's; sizes as Docker writes them (4g, 512m) become bytes."""
        from docker.utils import parse_bytes

        file_size = self.sandbox_file_size_limit
        limits = SandboxLimits(
            **self.feeding(SandboxLimits),
            memory_bytes=parse_bytes(self.sandbox_memory),
            file_size_bytes=parse_bytes(file_size) if file_size else None,
        )
        return LocalConfig(
            **self.feeding(LocalConfig),
            env=self.sandbox_environment(environ),
            limits=limits,
            hidden_paths=(default_config_file(), self.data_dir),
        )

    def docker_config(self, environ: Mapping[str, str] | None = None) -> DockerConfig:
        return DockerConfig(**self.feeding(DockerConfig), env=self.sandbox_environment(environ))

    def runtime_config(self, environ: Mapping[str, str] | None = None) -> RuntimeConfig:
        """What the runtime factory needs: the default kind, each kind's config, the pool."""
        return RuntimeConfig(
            **self.feeding(RuntimeConfig),
            kind=self.runtime,
            local=self.local_config(environ),
            docker=self.docker_config(environ),
            workspaces_dir=self.data_dir / "workspaces",
        )

    def executor_config(self) -> ExecutorConfig:
        return ExecutorConfig(**self.feeding(ExecutorConfig), action_timeouts=self.action_timeouts)

    def projections_config(self) -> ProjectionsConfig:
        return ProjectionsConfig(**self.feeding(ProjectionsConfig))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Each source's flat names nested (``llm_temperature`` -> ``llm.temperature``):
        the arguments', the environment's (``CHRONICLE_<FLAT NAME>``) and the TOML file's."""
        toml = TomlConfigSettingsSource(settings_cls, toml_file=default_config_file())
        return (
            NestedSource(settings_cls, init_settings),
            FlatEnvSource(settings_cls),
            NestedSource(settings_cls, toml),
        )

    @classmethod
    def model_construct(  # type: ignore[override]  # the mypy plugin's signature has the fields
        cls, _fields_set: set[str] | None = None, **values: Any
    ) -> Self:
        """Settings from ``values`` alone (no environment, no file), in flat names or tables
        as the sources take them; each group given is validated (its defaults filled in)."""
        names = flat_names(cls)
        nested = names.nest(values)
        for group, model in names.groups.items():
            if isinstance(nested.get(group), dict):
                nested[group] = model.model_validate(nested[group])
        return cast(Self, super().model_construct(_fields_set, **nested))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` in flat names or tables, as the sources take them; each group
        changed is validated (``model_copy`` itself validates nothing)."""
        if update:
            names = flat_names(type(self))
            update = names.nest(update)
            for group in names.groups:
                if isinstance(update.get(group), dict):
                    update[group] = names.updated(getattr(self, group), update[group])
        return super().model_copy(update=update, deep=deep)


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=2)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


@functools.cache
def flat_names(settings: type[BaseModel] = Settings) -> FlatNames:
    """The flat names of ``settings`` (a class, so derived once)."""
    return FlatNames.of(settings)
