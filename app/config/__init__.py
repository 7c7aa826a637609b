"""Settings from ``CHRONICLE_*`` environment variables and an optional TOML file.

Precedence: explicit arguments > environment > the TOML file > defaults. The TOML file is
``$CHRONICLE_CONFIG`` if set, else ``config.toml`` in the user config directory.

``Settings`` holds each part's own config as a group (``settings.llm``, ``settings.store``,
``settings.projections``, ...), so every setting is declared once, by the config that uses
it; each keeps its flat name of before (``CHRONICLE_POOL_MAX_SIZE``, a TOML
``llm_temperature``), derived from the models (app/config/flat.py). Only sessions and above
(sessions, evaluation, external, server, cli) read ``Settings``; every lower package takes its
own config, which they pass down (``settings.store``). See docs/architecture.md.
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
from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from app.config.flat import Flat, FlatEnvSource, FlatNames, NestedSource
from app.config.groups import (
    GatewayLimitDefaults,
    GatewayLimits,
    GatewaySettings,
    ServerSettings,
    WorkerSettings,
)
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

__all__ = [
    "GatewayLimitDefaults",
    "GatewayLimits",
    "Settings",
    "default_config_file",
    "default_data_dir",
    "flat_names",
]

APP_NAME = "chronicle"


def default_config_file() -> Path:
    explicit = os.environ.get("CHRONICLE_CONFIG")
    if explicit:
        return Path(explicit)
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME))


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
    # -- groups: each declared once by its own config; flat names as app/config/flat.py says --
    store: Annotated[
        StoreConfig, Flat.named("", {"statement_timeout": "database_statement_timeout"})
    ] = Field(default_factory=StoreConfig)
    projections: Annotated[ProjectionsConfig, Flat.named("projections_")] = Field(
        default_factory=ProjectionsConfig
    )
    worker: Annotated[WorkerSettings, Flat.named("worker_")] = Field(default_factory=WorkerSettings)
    llm: Annotated[LlmSettings, Flat.named("llm_")] = Field(default_factory=LlmSettings)
    gateway: Annotated[GatewaySettings, Flat.named("gateway_")] = Field(
        default_factory=GatewaySettings
    )
    server: Annotated[
        ServerSettings, Flat.named("server_", {"workspace_roots": "workspace_roots"})
    ] = Field(default_factory=ServerSettings)

    # -- model gateway for agents Chronicle does not run (app/external, docs/gateway.md) ----

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
        """A copy with ``update`` in flat names or tables, as the sources take them (unvalidated,
        as ``model_copy`` is); a name that is no setting is an error."""
        if update:
            names = flat_names(type(self))
            update = names.nest(update)
            unknown = [key for key in update if key not in type(self).model_fields]
            if unknown:
                raise ValueError(f"no such setting: {', '.join(unknown)}")
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
