"""Patchbay's settings (pydantic-settings, prefix ``PATCHBAY_``).

Every probe bound is a named setting (15 s, 50 pages, 2 MiB of metadata, 16 KiB of stderr, 4 probes
at once by default). Sizes are bytes, times are seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import platformdirs
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from patchbay.core.redaction import redact_url

__all__ = ["Settings", "default_home"]


def default_home() -> Path:
    """The platform user-data directory for Patchbay (``~/.local/share/patchbay`` on Linux)."""
    return Path(platformdirs.user_data_dir("patchbay", appauthor=False))


class Settings(BaseSettings):
    """Process-wide settings; construct with keywords to override the environment.

    Usage::

        settings = Settings(home=tmp_path)          # tests
        settings = Settings()                       # PATCHBAY_HOME, PATCHBAY_DATABASE_URL, ...
    """

    model_config = SettingsConfigDict(env_prefix="PATCHBAY_", env_nested_delimiter="__", extra="ignore")

    home: Path = Field(default_factory=default_home)
    """The data home: database, credentials, artifacts, session event logs."""
    database_url: str | None = None
    """SQLAlchemy URL; default ``sqlite:///<home>/patchbay.db``."""

    probe_connect_timeout: float = 15.0
    """Seconds for one whole probe: spawn/connect, initialize and the list requests."""
    probe_max_pages: int = 50
    """Most tools/list + resources/list pages one probe follows."""
    probe_max_metadata_bytes: int = 2 * 1024 * 1024
    """Most bytes of tool and resource metadata one probe accepts."""
    stderr_tail_bytes: int = 16 * 1024
    """Bytes of a stdio server's stderr kept (redacted) for diagnostics."""
    probe_concurrency: int = 4
    """Probes running at once, process-wide."""
    tool_cache_ttl: float = 24 * 3600.0
    """Seconds a cached tool catalog stays fresh."""

    request_timeout: float = 60.0
    """Seconds a tool call may wait for its result before it fails with reason ``timeout``."""
    connect_timeout: float = 15.0
    """Seconds the runtime waits for a connection (spawn + initialize), counted afresh from each
    OAuth request of the connect (authorization-server round trips have their own HTTP timeout)."""
    result_preview_chars: int = 500
    """Characters of a tool result kept as ``resultPreview`` in events."""
    idle_timeout: float = 300.0
    """Seconds without calls after which a lazy or eager connection is closed (0: never)."""
    max_call_seconds: float = 600.0
    """Hard cap on one call's total seconds: progress notifications extend ``request_timeout``
    only up to this."""
    unresponsive_timeouts: int = Field(default=3, ge=0)
    """Consecutive request timeouts after which a connected server counts as unresponsive and is
    restarted through its restart policy (a crash, ``mcp.server.crashed {reason: "unresponsive"}``);
    0 never does. A connector's ``unresponsive_timeouts`` runtime option overrides it."""
    shutdown_grace: float = Field(default=5.0, ge=0)
    """Seconds calls in flight may still finish when ``serve`` is stopped (SIGTERM, Ctrl-C); then
    they are cancelled (reason ``cancelled``) and every server process group is killed."""
    inflight_budget_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    """Bytes of incoming messages all connections of this process may buffer at once while they
    read them; a reader waits for budget when it is used up (one message larger than the budget
    still proceeds when nothing else holds any). The per-message limit applies as well."""
    max_output_bytes: int = 10 * 1024 * 1024
    """Bytes of tool-result content above which the result is cut to a preview and stored whole as
    an artifact."""
    max_output_lines: int = 100_000
    """Lines of text content above which the result is cut the same way."""
    output_preview_bytes: int = 64 * 1024
    """Bytes of head + tail kept in the preview of an oversized result."""
    schema_max_depth: int = 32
    """Deepest nesting of a tool's input/output JSON Schema; deeper tools are left out."""
    schema_max_nodes: int = 10_000
    """Most JSON values in one tool's schemas; larger tools are left out."""
    schema_max_bytes: int = 256 * 1024
    """Most bytes of one tool's schemas (compact JSON); larger tools are left out."""
    protocol_mode: str = "legacy"
    """The SDK ``Client`` mode: ``legacy`` (initialize handshake; server→client requests work) or ``auto``."""
    screening_max_bytes: int = Field(default=256 * 1024, ge=1024)
    """UTF-8 bytes of one item (prompt expansion, resource content, tool result) the injection
    scanner reads; a bigger item is scanned in its first and last half of this and is marked
    untrusted (rule ``scan_limit``)."""
    screening_policy: Literal["label", "withhold"] = "label"
    """What an item the injection scanner flags becomes in a model's context: ``label`` (wrapped in
    an untrusted-content label) or ``withhold`` (a placeholder naming the rules)."""
    api_host: str = "127.0.0.1"
    """Address ``patchbay serve`` binds; anything but loopback also needs ``--allow-remote``."""
    api_port: int = Field(default=8765, ge=0, le=65535)
    """TCP port ``patchbay serve`` binds (0: any free port, printed at start)."""
    api_session_max_age: int = Field(default=12 * 60 * 60, ge=1)
    """Seconds the browser session cookie of a login URL is accepted (its ``Max-Age``); a cookie
    also stops working when ``serve`` restarts."""
    approval_expiry: float = Field(default=600.0, gt=0)
    """Seconds a browser approval waits for a person's answer; then the call is denied
    (``permission_denied``). Waiting does not count against the call's ``request_timeout``."""
    approval_recheck: float = Field(default=2.0, gt=0)
    """Seconds after which a waiting call re-reads its approval in the store without a wake-up
    (an answer given on another instance arrives at once over Redis pub/sub; this bounds the
    delay while Redis is down or a message was lost)."""
    api_max_body_bytes: int = Field(default=2 * 1024 * 1024, ge=1024)
    """Most bytes of one REST API request body (declared or streamed); a bigger one is refused with
    413 ``payload_too_large`` before more of it is read."""
    builtins: bool = True
    """Seed the built-in connectors (``patchbay.core.builtins``) into the registry when the control
    plane opens (``PATCHBAY_BUILTINS=off``: never; built-ins already registered stay)."""
    redis_url: SecretStr | None = None
    """Redis for coordination between instances (``redis://[:password@]host:6379/0``); unset: one
    instance, coordination in process. Only its redacted form (:attr:`redis_url_display`) is shown."""
    redis_prefix: str = "patchbay:"
    """Put before every key Patchbay writes to Redis, so deployments can share one Redis."""
    redis_timeout: float = Field(default=0.5, gt=0)
    """Seconds Patchbay waits for Redis to connect or answer before it counts as unavailable."""
    probe_lease_ttl: float = Field(default=30.0, gt=0)
    """Seconds a probe's lease outlives its holder's last renewal (renewed every third of it): how
    long another instance waits for the lease of an instance that died mid-probe."""
    gateway_direct_max_tools: int = Field(default=40, ge=0)
    """``patchbay gateway --mode auto`` lists tools directly when the workspace offers at most this
    many (cached catalogs, denied tools not counted); more, and it offers the one proxy tool."""
    gateway_direct_max_schema_tokens: int = Field(default=8000, ge=0)
    """``--mode auto`` also switches to the proxy tool when the direct definitions would cost more
    than this many estimated tokens (compact JSON bytes / 4)."""
    gateway_approval_wait: float = Field(default=50.0, gt=0)
    """Seconds a gateway's ``ask`` call waits for the person's answer on the settings page before
    it ends ``approval_pending`` (under the 60 s many hosts give a call); the approval stays open
    and the identical call made again takes the answer (``PATCHBAY_GATEWAY_APPROVAL_WAIT``)."""
    gateway_reload_poll: float = Field(default=2.0, gt=0)
    """Seconds between a running gateway's looks at the store's change counter: a change committed
    by another process (a grant, a connector added or disabled) reloads its runtime within this."""

    @property
    def redis_url_display(self) -> str | None:
        """:attr:`redis_url` with any password masked; None when unset."""
        return None if self.redis_url is None else redact_url(self.redis_url.get_secret_value())

    @field_validator("redis_url", mode="before")
    @classmethod
    def _empty_redis_url_means_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("home", mode="before")
    @classmethod
    def _empty_home_means_default(cls, value: object) -> object:
        # PATCHBAY_HOME= (empty) must not silently mean "the current directory".
        if value is None or (isinstance(value, str) and not value.strip()):
            return default_home()
        return value

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.home / 'patchbay.db'}"

    @property
    def database_identity(self) -> str:
        """Which database the registry is, without credentials: ``sqlite:<absolute file>`` or
        ``<backend>://<host>:<port>/<database>``. The credential store records it on each new
        credential, so a data home opened against another database never repairs away what
        belongs to the first one."""
        parts = urlsplit(self.resolved_database_url)
        backend = parts.scheme.partition("+")[0]
        if backend == "sqlite":
            path = parts.path[1:] if parts.path.startswith("/") else parts.path
            return f"sqlite:{Path(path).expanduser().resolve() if path and path != ':memory:' else ':memory:'}"
        return f"{backend}://{parts.hostname or ''}:{parts.port or ''}{parts.path}"

    @property
    def sessions_dir(self) -> Path:
        return self.home / "sessions"

    @property
    def artifacts_dir(self) -> Path:
        """Content-addressed store of oversized tool results (files mode 0600)."""
        return self.home / "artifacts"
