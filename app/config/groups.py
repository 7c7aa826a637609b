"""The settings of the processes above the packages (workers, the access service, the model
gateway for agents Chronicle does not run, the retention policies), which read ``Settings``
themselves: each a group of its own (``settings.worker``, ``settings.server``,
``settings.gateway``, ``settings.retention``), flat names ``worker_*``, ``server_*``,
``gateway_*``, ``retention_*`` (app/config/flat.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import NoDecode

#: Every group: frozen, and a key in its TOML table that is no setting is an error.
GROUP = ConfigDict(frozen=True, extra="forbid")


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


class WorkerSettings(BaseModel):
    """How a worker (app/sessions/worker.py) holds, paces and gives up the sessions it runs."""

    model_config = GROUP

    lease_duration: float = Field(
        default=30.0,
        gt=0,
        description="seconds a worker's lease on a session lasts unless renewed: a worker that "
        "dies (kill -9) is replaced by another within this",
    )
    heartbeat_interval: float = Field(
        default=10.0, gt=0, description="seconds between a worker's lease renewals"
    )
    max_sessions: int = Field(default=4, ge=1, description="sessions one worker runs at once")
    max_attempts: int = Field(
        default=3,
        ge=1,
        description="claims of a session whose workers all died running it before one gives "
        "up on it (recorded as an error in its log)",
    )
    refused_backoff: float = Field(
        default=2.0,
        gt=0,
        description="seconds before a session whose run the database refused for now (its disk "
        "full, out of memory or connections) is tried again; doubled at each refusal in a row, "
        "up to worker_refused_backoff_max",
    )
    refused_backoff_max: float = Field(
        default=60.0, gt=0, description="the longest wait between two tries of a refused run"
    )
    reap_interval: float = Field(
        default=600.0, gt=0, description="seconds between a worker's sweeps for stale sandboxes"
    )
    sweep_interval: float = Field(
        default=30.0,
        gt=0,
        description="seconds between a worker's sweeps for API evaluation runs a dead worker "
        "left unfinished (a trial ended but unscored, or the next trials not queued)",
    )
    drain_timeout: float = Field(
        default=25.0,
        gt=0,
        description="seconds a worker stopped by SIGTERM waits for its sessions' steps in "
        "flight; then it stops them (what is still running is reported interrupted when "
        "another worker resumes the session)",
    )

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> Self:
        if self.heartbeat_interval >= self.lease_duration:
            raise ValueError(
                f"worker_heartbeat_interval ({self.heartbeat_interval} s) must be shorter "
                f"than worker_lease_duration ({self.lease_duration} s), or leases expire "
                "while their workers run them"
            )
        return self


class GatewaySettings(BaseModel):
    """The model gateway for agents Chronicle does not run (app/external, docs/gateway.md)."""

    model_config = GROUP

    model_map: dict[str, str] = Field(
        default_factory=dict,
        description="model names (or patterns: '*', 'gpt-*') an agent may send to the "
        'gateway, mapped to the litellm model that answers them, e.g. {"*": '
        '"openai/gpt-4o-mini"}; the most specific pattern wins',
    )
    models: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="model names (or patterns) an agent may ask the gateway for as they are "
        "(litellm names); the server's own llm_model is always allowed",
    )
    max_body_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        description="largest request body the model gateway (/v1/...) reads; more is 413",
    )
    max_concurrency: int = Field(
        default=64, ge=1, description="gateway calls in flight per upstream model"
    )
    limits: GatewayLimitDefaults = Field(
        default_factory=GatewayLimitDefaults,
        description="limits of every user's and every session's gateway calls (cost, calls, "
        'models, rate), e.g. {"session": {"max_calls": 500}, "user": {"max_cost_usd": 20}}',
    )
    rate_limit: int = Field(
        default=6000,
        ge=1,
        description="model calls per minute one token may make through the model gateway "
        "(/v1/...), counted apart from server_rate_limit",
    )

    @field_validator("models", mode="before")
    @classmethod
    def _models_list(cls, value: object) -> object:
        """``CHRONICLE_GATEWAY_MODELS=gpt-4o,claude-*`` as well as a TOML list."""
        if isinstance(value, str):
            return [name.strip() for name in value.split(",") if name.strip()]
        return value


class ServerSettings(BaseModel):
    """The access service (``chronicle serve``): its limits, timeouts and what it believes."""

    model_config = GROUP

    workspace_roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="directories under which an API client may name an existing workspace "
        "(a directory or git repository); unset: only fresh workspaces under data_dir",
    )
    rate_limit: int = Field(
        default=600, ge=1, description="requests per minute one token (or one address) may make"
    )
    max_body_bytes: int = Field(
        default=1024 * 1024, ge=1024, description="largest request body the API reads"
    )
    max_active_sessions: int = Field(
        default=5, ge=1, description="sessions one user may have working (or starting) at once"
    )
    otlp_max_body_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        description="largest OTLP trace export POST /v1/traces reads (after gzip); more is 413",
    )
    otlp_max_spans: int = Field(
        default=50_000, ge=1, description="spans one OTLP trace export may carry; more is 413"
    )
    otlp_quiet_seconds: float = Field(
        default=5.0,
        gt=0,
        description="seconds a received trace whose root span has not come waits for more "
        "spans before it settles into its session",
    )
    login_hours: float = Field(
        default=12.0, gt=0, description="lifetime of a browser login's session cookie"
    )
    max_streams_per_user: int = Field(
        default=20, ge=1, description="live event streams one user may hold open in one API process"
    )
    stream_buffer_events: int = Field(
        default=1000,
        ge=1,
        description="events a live stream holds for a client not yet sent; when it stays full "
        "for server_stream_stall_seconds the client is told where to resume and closed",
    )
    stream_stall_seconds: float = Field(
        default=10.0,
        gt=0,
        description="seconds a stream client's full buffer may wait for it before it is closed",
    )
    stream_keepalive_seconds: float = Field(
        default=15.0, gt=0, description="seconds between SSE keep-alive comments on a quiet stream"
    )
    token_cache_seconds: float = Field(
        default=5.0,
        ge=0,
        le=300,
        description="seconds an API process remembers a live Bearer token instead of asking "
        "the database on every request; a token revoked elsewhere (chronicle tokens revoke) "
        "stops working within this many seconds (0: check every request)",
    )
    shutdown_grace: int = Field(
        default=3,
        ge=1,
        description="seconds a server stopped by SIGTERM lets the requests in flight finish "
        "before it cancels them (a client that never finishes sending its request would "
        "otherwise hold the exit); live streams end at once",
    )
    header_timeout: float = Field(
        default=10.0,
        gt=0,
        description="seconds a client has to send a request's line and headers (from the "
        "connection's opening, or the end of the previous response); then it is answered 408 "
        "and closed",
    )
    body_timeout: float = Field(
        default=30.0,
        gt=0,
        description="seconds a client has to send a request's whole body once its headers "
        "arrived; then it is answered 408 and closed (responses and streams are never timed)",
    )
    write_timeout: float = Field(
        default=60.0,
        gt=0,
        description="seconds a response (or stream) whose write buffer is full may wait for "
        "the client to read any of it; then the connection is dropped (a client that never "
        "reads would otherwise hold its connection for good)",
    )
    max_connections: int = Field(
        default=1000,
        ge=1,
        description="connections one API process holds open at once (streams included); one "
        "more is answered 503 with Retry-After at once, and those open carry on",
    )
    forwarded_allow_ips: str = Field(
        default="",
        description="addresses of the proxies in front whose X-Forwarded-For and "
        "X-Forwarded-Proto are believed (comma-separated, as uvicorn's --forwarded-allow-ips; "
        "'*': any); empty: none, the peer's own address is the client's (for the failure "
        "limit, logins and the audit trail)",
    )
    max_connections_per_address: int = Field(
        default=0,
        ge=0,
        description="connections one client address (an IPv6 /64) may hold open at once; one "
        "more is answered 503 at once (0: half of server_max_connections); the proxies "
        "server_forwarded_allow_ips names are not limited",
    )
    secure_cookies: bool = Field(
        default=False,
        description="mark the login cookies Secure (set it when clients reach the API over "
        "HTTPS through a proxy; a request that arrives over HTTPS gets them Secure anyway)",
    )
    auth_failures: int = Field(
        default=20,
        ge=1,
        description="refused credentials (unknown tokens, ended logins, wrong sign-in codes) "
        "one client address may present a minute in one API process; past it its requests "
        "with credentials are answered 429 with Retry-After",
    )
    login_code_minutes: float = Field(
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


# -- retention (docs/erasure.md, "Retention"): which ended sessions are erased, after how
# long, and whether they are archived first. A policy names sessions by age since they ended
# (their last event), and optionally by owner, by tag (of an annotation on the session) and by
# evaluation run; each filter given must hold, any value of one list will do.

#: An evaluation run filter that matches any evaluation trial.
ANY_RUN = "*"


class RetentionPolicy(BaseModel):
    """One rule: sessions that ended ``after_days`` ago or more (and match the filters) are
    archived under ``archive_to`` when it is set, then erased under a signed tombstone."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    """Recorded in each tombstone and audit record: which policy erased the session."""
    after_days: float = Field(gt=0, allow_inf_nan=False)
    """Days since the session ended (its last event) before it goes."""
    users: tuple[str, ...] = ()
    """Only sessions these users own (by name); empty: anyone's."""
    tags: tuple[str, ...] = ()
    """Only sessions with an annotation carrying one of these tags; empty: any."""
    evaluation_runs: tuple[str, ...] = ()
    """Only trials of these evaluation runs (``*``: any run's); empty: any session."""
    archive_to: Path | None = None
    """Archive the sessions first (a verified, anchored ``chronicle archive`` directory made
    under this directory per round); unset: erase without archiving."""


class RetentionConfig(BaseModel):
    """The policies, and how often the projection runner applies them."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    policies: tuple[RetentionPolicy, ...] = ()
    """The retention policies (none: sessions are kept until erased by hand)."""
    interval: float = Field(default=3600.0, gt=0)
    """Seconds between two rounds of the policies where projections run."""
