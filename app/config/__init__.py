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
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Self, cast

import platformdirs
from pydantic import BaseModel, Field, field_validator, model_validator
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
    RetentionConfig,
    ServerSettings,
    WorkerSettings,
)
from app.events.masking import SecretMasker, environment_secrets, is_secret_name, url_secrets
from app.llm.config import LlmSettings
from app.projections.config import OtlpExportConfig, ProjectionsConfig
from app.runtime.config import ExecutorConfig, RuntimeConfig
from app.runtime.workspace_noise import DEFAULT_LEAVE_OUT
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


#: The sandbox settings' flat names: ``sandbox_`` + the name (``sandbox_cpus``), one name for
#: the local and the Docker sandbox's field alike (``sandbox_network`` sets both); the local
#: limits named as Docker names its own (``sandbox_memory = "4g"``, also the Docker memory).
SANDBOX_NAMES = Flat.named(
    "sandbox_",
    {
        "kind": "runtime",
        "local.limits.processes": "sandbox_pids_limit",
        "local.limits.memory_bytes": "sandbox_memory",
        "local.limits.file_size_bytes": "sandbox_file_size_limit",
        "local.limits.workspace_mb": "sandbox_workspace_limit_mb",
        "docker.hosts": "docker_hosts",
        "docker.host_max_sandboxes": "docker_host_max_sandboxes",
        "docker.tls_cert": "docker_tls_cert",
        "docker.tls_key": "docker_tls_key",
        "docker.tls_ca": "docker_tls_ca",
        "docker.files": "docker_files",
    },
    within=("local", "local.limits", "docker"),
    omitted=("workspaces_dir", "local.env", "local.hidden_paths", "docker.env"),
)


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
    read_database_url: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="URLs of hot standbys (streaming replicas) the log's reads may go to, "
        "separated by spaces; a read a standby has not caught up for goes to the primary "
        "(docs/scale-out.md). Unset: every read on database_url",
    )
    data_dir: Path = Field(default_factory=default_data_dir)
    anchor_key_file: Path | None = Field(
        default=None,
        description="Ed25519 private key (PEM) that signs anchors; unset: generated in "
        "data_dir/secrets on first use",
    )

    # -- groups: each part's own config, every setting declared once by it; their flat names
    # (CHRONICLE_POOL_MAX_SIZE, a TOML llm_temperature) as the Flat markers say (flat.py) -----
    store: Annotated[
        StoreConfig, Flat.named("", {"statement_timeout": "database_statement_timeout"})
    ] = Field(default_factory=StoreConfig)
    projections: Annotated[ProjectionsConfig, Flat.named("projections_")] = Field(
        default_factory=ProjectionsConfig
    )
    otlp_export: Annotated[OtlpExportConfig, Flat.named("otlp_export_")] = Field(
        default_factory=OtlpExportConfig
    )
    llm: Annotated[LlmSettings, Flat.named("llm_")] = Field(default_factory=LlmSettings)
    sandbox: Annotated[RuntimeConfig, SANDBOX_NAMES] = Field(default_factory=RuntimeConfig)
    executor: Annotated[
        ExecutorConfig, Flat.named("sandbox_", {"action_timeouts": "action_timeouts"})
    ] = Field(default_factory=ExecutorConfig)
    worker: Annotated[WorkerSettings, Flat.named("worker_")] = Field(default_factory=WorkerSettings)
    server: Annotated[
        ServerSettings, Flat.named("server_", {"workspace_roots": "workspace_roots"})
    ] = Field(default_factory=ServerSettings)
    gateway: Annotated[GatewaySettings, Flat.named("gateway_")] = Field(
        default_factory=GatewaySettings
    )
    retention: Annotated[RetentionConfig, Flat.named("retention_")] = Field(
        default_factory=RetentionConfig
    )

    # -- settings of no part below the sessions ---------------------------------------------
    mcp_servers: list[McpServerConfig] = Field(
        default_factory=list, description="MCP servers every session starts ([[mcp_servers]])"
    )
    sandbox_env: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="names of host environment variables passed into sandboxes (none else is)",
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
    workspace_diff_leave_out: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_LEAVE_OUT),
        description="name patterns a workspace.diff leaves out as noise, each matched against "
        "every part of a path (__pycache__, *.pyc, ...); empty: none",
    )
    sandbox_reap_after: float = Field(
        default=7200.0, gt=0, description="seconds without a heartbeat before a sandbox is reaped"
    )

    @field_validator("read_database_url", mode="before")
    @classmethod
    def _urls_list(cls, value: object) -> object:
        """Several URLs in one variable are separated by spaces (a URL that lists several
        hosts holds commas already), or given as a TOML list."""
        return value.split() if isinstance(value, str) else value

    @field_validator("sandbox_env", "workspace_diff_leave_out", mode="before")
    @classmethod
    def _names_list(cls, value: object) -> object:
        """``CHRONICLE_SANDBOX_ENV=GITHUB_TOKEN,NPM_TOKEN`` as well as a TOML list (and the
        same for ``CHRONICLE_WORKSPACE_DIFF_LEAVE_OUT=__pycache__,*.pyc``)."""
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
        for url in self.read_database_url:
            found.update(url_secrets("CHRONICLE_READ_DATABASE_URL", url))
        found.update(url_secrets("CHRONICLE_OTLP_EXPORT_URL", self.otlp_export.url))
        for value in self.otlp_export.header_values().values():
            if value:
                found[value] = "CHRONICLE_OTLP_EXPORT_HEADERS"
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

    # -- the two configs the settings build rather than hold --------------------------------

    def database_config(self) -> DatabaseConfig:
        """Which PostgreSQL. Built, not held: ``data_dir`` is every part's (the workspaces, the
        secrets, the anchor key), so it stays a top-level setting, and the database's config
        joins it to the URLs."""
        from app.store.config import DatabaseConfig

        return DatabaseConfig(
            database_url=self.database_url,
            data_dir=self.data_dir,
            analyst_database_url=self.analyst_database_url,
            owner_database_url=self.owner_database_url,
            read_database_urls=tuple(self.read_database_url),
        )

    def runtime_config(self, environ: Mapping[str, str] | None = None) -> RuntimeConfig:
        """The sandbox group as the runtime factory takes it. Not a copy: it puts in what only
        this process knows, the values of the host variables ``sandbox_env`` names
        (``environ``), the paths a local sandbox must not see (the settings file, the data
        directory) and where pooled sandboxes get their workspaces (``data_dir``)."""
        env = self.sandbox_environment(environ)
        hidden = (default_config_file(), self.data_dir)
        sandbox = self.sandbox
        return sandbox.model_copy(
            update={
                "local": sandbox.local.model_copy(update={"env": env, "hidden_paths": hidden}),
                "docker": sandbox.docker.model_copy(update={"env": env}),
                "workspaces_dir": self.data_dir / "workspaces",
            }
        )

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
