"""The connector service: the only writer of canonical state (DESIGN.md "Layers").

It validates input, keeps connectors and tool grants, and runs probes and caches
their catalogs under the config fingerprint; every committed mutation is
re-projected to the workspaces it affects. The read side (projects,
cached catalogs, effective decisions, runtime configs) is
:class:`~patchbay.control.queries.ConnectorQueries`, which the service holds as ``queries``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, cast

from patchbay.adapters.credentials import CredentialStore
from patchbay.adapters.store import Repository
from patchbay.adapters.store.projects import project_id_for
from patchbay.control.credentials import BindingSpec, CredentialService
from patchbay.control.options import checked_options as _checked_options
from patchbay.control.options import merge_runtime_options
from patchbay.control.queries import ConnectorQueries, catalog_fingerprint, real_dir
from patchbay.core.credentials import BINDINGS_KEY, check_bindings
from patchbay.core.errors import (
    BuiltinConnectorError,
    CanonicalStateUnavailable,
    ConfigError,
    NotFoundError,
    ProbeError,
)
from patchbay.core.models import (
    RESOURCE_SUBJECT,
    Connector,
    ConnectorSettings,
    ConnectorTarget,
    GrantDecision,
    GrantKind,
    HttpTarget,
    ProbeOutcome,
    ProbeResult,
    RuntimeOptions,
    StdioTarget,
    ToolCacheEntry,
    ToolGrant,
)
from patchbay.core.names import validate_connector_name
from patchbay.core.oauth import oauth_from_config
from patchbay.core.redaction import redact_text
from patchbay.core.settings import Settings
from patchbay.core.validation import (
    validate_http_target,
    validate_policy_url,
    validate_socket_path,
    validate_stdio_target,
    validate_text,
)

if TYPE_CHECKING:
    from patchbay.control.builtins import SeedReport
    from patchbay.control.probe import Prober
    from patchbay.control.projection import ProjectionReport, Projector
    from patchbay.control.transport_detect import TransportDetection

__all__ = ["ConnectorService", "merge_runtime_options"]

_DECISIONS = ("allow", "ask", "deny")
_PROMPT_DECISIONS = ("allow", "deny")
_OLD_RESOURCE_KEY = "resources/read"
_T = TypeVar("_T")
_log = logging.getLogger(__name__)

CommittedListener = Callable[[str | None, "ProjectionReport"], object]
"""``listener(project_id, report)`` after a committed mutation was re-projected: ``project_id`` is
the one project affected (a project grant) or None (every project); ``report`` says which
workspaces were written (:class:`~patchbay.control.projection.ProjectionReport`)."""


class _SettingsChanges(TypedDict, total=False):
    """The global settings one update changes (the keyword arguments of ``ConnectorStore.update_settings``)."""

    enabled: bool
    approval_mode: str
    include_tools: tuple[str, ...]
    exclude_tools: tuple[str, ...]


def _now_ms() -> int:
    return int(time.time() * 1000)


def _request_headers(bindings: Sequence[BindingSpec]) -> dict[str, str]:
    """The HTTP headers ``bindings`` ask for, with the values they carry or name (an ``@env:VAR``
    read now); a shared credential (``@credential:``) cannot be bound before the connector exists."""
    headers: dict[str, str] = {}
    for spec in bindings:
        if spec.delivery == "env":
            continue
        value = spec.value if spec.value is not None else spec.plain
        if spec.variable is not None:
            found = os.environ.get(spec.variable)
            value = found if found or (found == "" and spec.default_mode == "unset") else spec.default
        if not value:
            continue
        if spec.delivery == "bearer":
            headers["Authorization"] = f"Bearer {value}"
        else:
            headers[spec.name] = value
    return headers


_TRANSPORT_BOUND_OPTIONS = {"allow_private": "allow-private", "limits": "limits"}
"""Runtime options only some transports take → their ``--reset`` name."""


class ConnectorService:
    """The writer of canonical state: connectors, grants, probes and their cached catalogs.

    Every committed mutation is re-projected (:attr:`projector`). Reads go through
    :attr:`queries` (projects, catalog freshness, effective decisions, runtime configs).

    Args:
        repository: the canonical store.
        settings: limits and the data home (its ``credentials.json`` is the credential store).
        prober: runs probes; one per service so its per-connector locks and global semaphore are shared.
    """

    def __init__(self, repository: Repository, settings: Settings, prober: Prober | None = None):
        self.repository = repository
        self.settings = settings
        self.credentials = CredentialService(
            CredentialStore(settings.home, database=settings.database_identity), repository
        )
        self.credentials.open()  # repair what a crash left, and mask every stored value from now on
        self._prober = prober
        self.queries = ConnectorQueries(repository)
        """The read side over the same store."""
        self._projector: Projector | None = None
        self._projector_lock = threading.Lock()
        self.last_projection: ProjectionReport | None = None
        """What the re-projection after the last committed mutation wrote or skipped."""
        self._committed: list[CommittedListener] = []
        if settings.builtins:
            try:
                self.seed_builtins()
            except CanonicalStateUnavailable as exc:  # a read-only store still serves reads
                _log.warning("the built-in connectors could not be seeded: %s", exc)

    @property
    def prober(self) -> Prober:
        """The prober, built on first use: commands that never probe (``connector list``) do not
        load the MCP SDK it drives."""
        if self._prober is None:
            from patchbay.control.probe import Prober

            self._prober = Prober(self.settings, credentials=self.credentials.store)
        return self._prober

    async def aclose(self) -> None:
        """Close what the prober holds open between probes (its Redis connection, when
        ``PATCHBAY_REDIS_URL`` is set and a probe ran); the service stays usable."""
        if self._prober is not None:
            await self._prober.aclose()

    @property
    def projector(self) -> Projector:
        """The projector (:mod:`patchbay.control.projection`), built on first use: commands that
        write nothing (``connector list``) do not load it. One per service, whichever thread asks
        first (its caches and lock are shared by every caller)."""
        if self._projector is None:
            with self._projector_lock:
                if self._projector is None:
                    from patchbay.control.projection import Projector

                    self._projector = Projector(self.queries, home=self.settings.home)
        return self._projector

    def on_committed(self, listener: CommittedListener) -> Callable[[], None]:
        """Call ``listener`` after every committed mutation, once its workspaces are re-projected
        (e.g. :meth:`patchbay.runtime.sessions.SessionHost.committed` reloads the runtimes). It runs
        synchronously in the mutating caller's thread; one that raises is logged and never undoes
        the mutation. Returns a function that removes the listener."""
        self._committed.append(listener)

        def remove() -> None:
            if listener in self._committed:
                self._committed.remove(listener)

        return remove

    def _reprojected(self, result: _T, *, project_id: str | None = None) -> _T:
        """``result``, once the workspaces a committed mutation affects are re-projected: every
        known one, or only ``project_id``'s for a project grant
        (:mod:`patchbay.control.projection`), and the :meth:`on_committed` listeners were told.
        Never raises: a workspace that is gone or cannot be written is skipped and reported in
        :attr:`last_projection`."""
        report = self.last_projection = self.projector.reproject(project_id)
        for listener in tuple(self._committed):
            try:
                listener(project_id, report)
            except Exception:
                _log.exception("a committed-mutation listener failed (the mutation stands)")
        return result

    # -- connectors -------------------------------------------------------------------------

    def seed_builtins(self, python: str | None = None) -> SeedReport:
        """Register the built-in connectors that are missing and update the command of those that
        changed (:func:`patchbay.control.builtins.seed`); runs when the service opens with
        ``settings.builtins`` on. A user's choices, bindings, grants and caches are never touched.

        Args:
            python: the interpreter the built-ins run with; default this process's.

        Raises:
            CanonicalStateUnavailable: the store cannot be written.
        """
        from patchbay.adapters.egress_audit import audit_path
        from patchbay.control.builtins import seed, seeding_interpreter

        audit_file = str(audit_path(self.settings.home).absolute())
        report = seed(self.repository, python or seeding_interpreter(), audit_file=audit_file)
        return self._reprojected(report) if report.changed else report

    def add(
        self,
        name: str,
        target: ConnectorTarget,
        *,
        description: str = "",
        display_name: str | None = None,
        terms_url: str = "",
        privacy_url: str = "",
        enabled: bool = True,
        exist_ok: bool = False,
        runtime_options: Mapping[str, Any] | None = None,
        bindings: Sequence[BindingSpec] = (),
    ) -> tuple[Connector, bool]:
        """Register a connector. Returns ``(connector, created)``.

        With ``exist_ok``, an existing connector of that name with the same target is returned
        unchanged (``created`` False) if applying ``runtime_options`` to it would change nothing
        and it has exactly the requested ``bindings``; a different target, options or bindings
        are still an error.

        Args:
            runtime_options: option changes as for :meth:`update_runtime_options`, e.g.
                ``{"lifecycle": "eager", "restart": {"max_restarts": 5}}``; stored sparsely.
            bindings: credentials to create and bind
                (``parse_env``/``parse_header``/``parse_bearer`` of
                :mod:`patchbay.control.credentials`): managed values go to the credential store,
                owned by the new connector; the connector stores references only. The store is
                written just before the database commit, under the store's lock; if the commit fails
                the store is put back, and a crash in between leaves credentials the next service
                start deletes (:meth:`CredentialService.repair`).

        Raises:
            ConfigError: ``invalid_config`` for a bad name, a name already taken, a bad runtime
                option (field e.g. ``request_timeout``, ``limits`` for limits on a remote target) or
                a bad binding (field ``env``, ``header``, ``bearer`` or ``bindings``).
            CanonicalStateUnavailable: the credential store cannot be written (nothing is kept).
        """
        validate_connector_name(name)
        validate_text("description", description)
        validate_policy_url("terms_url", terms_url)
        validate_policy_url("privacy_url", privacy_url)
        if display_name is not None:
            validate_text("display_name", display_name, max_length=200)
        runtime_config = merge_runtime_options({}, runtime_options or {})
        _checked_options(runtime_config, target)
        records, stored = self.credentials.prepare_new(target.transport, bindings)
        if exist_ok:
            try:
                existing = self.repository.connectors.get_by_name(name)
            except NotFoundError:
                pass
            else:
                if existing.target == target:
                    merged = merge_runtime_options(existing.runtime_config, runtime_options or {})
                    if RuntimeOptions.model_validate(merged) == RuntimeOptions.model_validate(existing.runtime_config):
                        if self.credentials.same_bindings(existing, bindings):
                            return existing, False
                        raise ConfigError(
                            "bindings",
                            f"a connector named {name!r} already exists with different credential bindings "
                            f"(change them with: patchbay connector set {name} ...)",
                        )
                    raise ConfigError(
                        "runtime_config",
                        f"a connector named {name!r} already exists with different runtime options "
                        f"(change them with: patchbay connector set {name} ...)",
                    )
                raise ConfigError(
                    "name",
                    f"a connector named {name!r} already exists with a different target "
                    f"(see: patchbay connector show {name}; replace it with: patchbay connector remove {name})",
                )
        if stored:
            runtime_config[BINDINGS_KEY] = stored
        item = {
            "name": name,
            "display_name": display_name or name,
            "target": target,
            "description": description,
            "terms_url": terms_url,
            "privacy_url": privacy_url,
            "runtime_config": runtime_config,
            "settings": ConnectorSettings(enabled=enabled),
        }
        (connector,) = self.credentials.create_with(
            lambda before_commit: self.repository.connectors.create_many([item], before_commit=before_commit), [records]
        )
        return self._reprojected((connector, True))

    @staticmethod
    def stdio_target(command: str, args: list[str], *, cwd: str | None, workspace: Path) -> StdioTarget:
        """Validate a local command for ``add``.

        ``cwd`` is checked against ``workspace`` as text and again with symlinks resolved, so a link
        inside the workspace cannot lead out of it.

        Raises:
            ConfigError: ``invalid_config`` naming ``command``, ``args``, ``cwd`` or ``project``.
        """
        root = real_dir(workspace)
        if cwd and os.path.isabs(cwd):
            cwd = str(Path(cwd).resolve())
        target = validate_stdio_target(command, args, cwd=cwd, workspace=str(root))
        from patchbay.adapters.transports.stdio import workspace_cwd  # loads the MCP SDK: only here

        workspace_cwd(root, target.cwd)
        return target

    @staticmethod
    def command_problem(target: StdioTarget, *, workspace: Path) -> ProbeError | None:
        """Why ``target``'s command could not be started from ``workspace`` now, or None: the
        command resolved as a probe resolves it (on this process's ``PATH``; a relative path with a
        separator against the server's working directory), nothing run. ``add`` stores a command
        that is missing (it may be installed later); the interfaces warn with this.

        Returns:
            A :class:`ProbeError` with code ``command_not_found`` (not on PATH / no such file) or
            ``spawn_failed`` (not an executable file); None when it resolves, and when the
            workspace cannot be used (the probe reports that).
        """
        from patchbay.adapters.transports.stdio import resolve_command, workspace_cwd  # loads the MCP SDK: only here

        try:
            base = workspace_cwd(real_dir(workspace), target.cwd)
        except ConfigError:
            return None
        try:
            resolve_command(target.command, base=base)
        except ProbeError as exc:
            return exc
        return None

    @staticmethod
    def remote_target(url: str, transport: str = "streamable_http") -> ConnectorTarget:
        """Validate a remote target for ``add``: ``transport`` is ``streamable_http`` or ``sse``
        (detect one for ``auto`` first: :meth:`detect_transport`).

        Raises:
            ConfigError: ``invalid_config`` naming ``url`` or ``transport``.
        """
        return validate_http_target(url, transport)

    async def detect_transport(
        self,
        url: str,
        *,
        name: str = "auto",
        runtime_options: Mapping[str, Any] | None = None,
        bindings: Sequence[BindingSpec] = (),
    ) -> TransportDetection:
        """Find which transport ``url`` speaks, for an add with transport ``auto``
        (:func:`patchbay.control.transport_detect.detect_transport`); nothing is stored.

        Args:
            name: the connector-to-be, for messages and the egress audit (its lines name
                ``new:<name>``: the connector has no id yet).
            runtime_options: as for :meth:`add`; ``allow_private`` opens private addresses.
            bindings: as for :meth:`add`; header and bearer values (managed, ``@plain:`` or
                ``@env:VAR``) go with the detection requests and are masked in its messages.

        Raises:
            ConfigError: ``invalid_config``: a bad name, URL, runtime option or binding.
            ProbeError: neither transport answered (``server_closed``, ``timeout``,
                ``network_blocked``, ``tls_error``, ``protocol_error``, ...).
        """
        from patchbay.control.transport_detect import detect_transport  # loads the MCP SDK: only here

        validate_connector_name(name)
        target = validate_http_target(url, "streamable_http")
        runtime_config = merge_runtime_options({}, runtime_options or {})
        _checked_options(runtime_config, target)
        self.credentials.prepare_new(target.transport, bindings)  # checks the specs, writes nothing
        return await detect_transport(
            target.url,
            settings=self.settings,
            runtime_config=runtime_config,
            headers=_request_headers(bindings),
            credentials=self.credentials.store,
            name=name,
            connector_id=f"new:{name}",  # it has no id yet: the audit lines name the one being added
        )

    async def add_auto(self, name: str, url: str, **add: Any) -> tuple[Connector, bool, TransportDetection]:
        """:meth:`add` of a remote connector whose transport is detected first
        (:meth:`detect_transport`). Returns ``(connector, created, detection)``; the stored target
        names the detected transport.

        Args:
            add: the keyword arguments of :meth:`add` (``runtime_options`` and ``bindings`` go to
                the detection too).

        Raises:
            ConfigError, ProbeError: as :meth:`detect_transport` (nothing stored), then as :meth:`add`.
        """
        import anyio.to_thread

        detection = await self.detect_transport(
            url, name=name, runtime_options=add.get("runtime_options"), bindings=add.get("bindings", ())
        )
        target = validate_http_target(url, detection.transport)
        connector, created = await anyio.to_thread.run_sync(lambda: self.add(name, target, **add))
        return connector, created, detection

    @staticmethod
    def socket_target(path: str) -> ConnectorTarget:
        return validate_socket_path(path)

    def get(self, name: str) -> Connector:
        """:meth:`ConnectorQueries.get`: the connector called exactly ``name``.

        Raises:
            NotFoundError: ``not_found`` (also for strings that are no connector name at all).
        """
        return self.queries.get(name)

    def list_connectors(self) -> list[Connector]:
        """:meth:`ConnectorQueries.list_connectors`: every connector, ordered by name."""
        return self.queries.list_connectors()

    def set_enabled(self, name: str, enabled: bool) -> Connector:
        connector = self.get(name)
        return self._reprojected(
            self.repository.connectors.update_settings(
                connector.connector_id, connector.settings.revision, enabled=enabled
            )
        )

    def update_settings(
        self,
        name: str,
        *,
        approval_mode: str | None = None,
        include_tools: list[str] | None = None,
        exclude_tools: list[str] | None = None,
        enabled: bool | None = None,
        expected_revision: int | None = None,
    ) -> Connector:
        """Change global settings; None leaves a field as it is.

        Args:
            expected_revision: the settings revision the caller saw (checked even when nothing
                changes); default the one read now.

        Raises:
            ConfigError: ``invalid_config`` for an unknown approval mode or an empty/blank glob.
            RevisionConflictError: ``revision_conflict`` if the settings changed meanwhile.
        """
        connector = self.get(name)
        changes: _SettingsChanges = {}
        if enabled is not None:
            changes["enabled"] = enabled
        if approval_mode is not None:
            if approval_mode not in ("ask", "custom", "allow_all"):
                raise ConfigError("approval_mode", f"must be ask, custom or allow_all; got {approval_mode!r}")
            changes["approval_mode"] = approval_mode
        field_name: Literal["include_tools", "exclude_tools"]
        for field_name, patterns in (("include_tools", include_tools), ("exclude_tools", exclude_tools)):
            if patterns is None:
                continue
            if any(not p or not p.strip() or any(ord(ch) < 0x20 for ch in p) for p in patterns):
                raise ConfigError(field_name, "patterns must be non-empty globs without control characters")
            changes[field_name] = tuple(dict.fromkeys(patterns))
        if not changes and expected_revision is None:
            return connector
        revision = connector.settings.revision if expected_revision is None else expected_revision
        return self._reprojected(
            self.repository.connectors.update_settings(connector.connector_id, revision, **changes)
        )

    def update_runtime_options(
        self,
        name: str,
        *,
        expected_revision: int | None = None,
        dry_run: bool = False,
        **changes: Any,
    ) -> Connector:
        """Change a connector's runtime options (``runtime_config``).

        Changes: ``lifecycle`` (lazy|eager|keep_alive); ``idle_timeout``, ``request_timeout``,
        ``max_call_seconds`` (seconds > 0); ``restart`` (mapping: ``enabled``, ``base_delay``,
        ``max_delay`` seconds, ``max_restarts`` 0..100); ``limits`` (mapping, stdio only:
        ``address_space_bytes``, ``cpu_seconds``, ``open_files``); ``allow_private`` (bool, HTTP/SSE
        only: the egress guard may reach private addresses). ``None`` resets to the default
        (:func:`merge_runtime_options`); the result must pass :meth:`RuntimeOptions.parse_strict`. A
        change bumps ``revision``; a fresh tool cache moves to the new revision, as options are no
        part of the server's identity (like credential bindings).

        Args:
            expected_revision: the connector revision the caller saw; default the one read now.
            dry_run: validate and return the connector as it would be stored, writing nothing.

        Raises:
            NotFoundError: ``not_found``.
            ConfigError: ``invalid_config`` naming the field (``lifecycle``, ``restart.base_delay``,
                ``limits`` ...); nothing stored.
            RevisionConflictError: ``revision_conflict`` if the connector changed meanwhile; nothing stored.
        """
        connector = self.get(name)
        config = merge_runtime_options(connector.runtime_config, changes)
        _checked_options(config, connector.target)
        if dry_run:
            return connector.model_copy(update={"runtime_config": config})
        if config == connector.runtime_config:
            if expected_revision is not None:
                self.repository.connectors.update(connector.connector_id, expected_revision)
            return connector
        revision = connector.revision if expected_revision is None else expected_revision
        return self._reprojected(self._write_config(connector, revision, config))

    def update_details(
        self,
        name: str,
        *,
        expected_revision: int,
        display_name: str | None = None,
        description: str | None = None,
        terms_url: str | None = None,
        privacy_url: str | None = None,
    ) -> Connector:
        """Change a connector's display name, description, terms URL and/or privacy URL (an
        http(s) URL, or empty for none) under ``expected_revision``; the tool catalog stays fresh
        (they are no part of the server's identity). With none given, only the revision is checked.

        Raises:
            NotFoundError: ``not_found``.
            RevisionConflictError: ``revision_conflict``; nothing stored.
            ConfigError: ``invalid_config`` naming ``terms_url`` or ``privacy_url`` for a bad URL.
        """
        connector = self.get(name)
        given = (
            ("display_name", display_name),
            ("description", description),
            ("terms_url", None if terms_url is None else validate_policy_url("terms_url", terms_url)),
            ("privacy_url", None if privacy_url is None else validate_policy_url("privacy_url", privacy_url)),
        )
        fields = {k: v for k, v in given if v is not None}
        if not fields:
            return self.repository.connectors.update(connector.connector_id, expected_revision)
        return self._write(connector, expected_revision, **fields)

    def update_target(
        self,
        name: str,
        target: ConnectorTarget,
        *,
        expected_revision: int | None = None,
        runtime_options: Mapping[str, Any] | None = None,
        dry_run: bool = False,
    ) -> Connector:
        """Point a connector at another command, URL or socket, under the revision lock.

        ``target`` comes from :meth:`stdio_target`, :meth:`remote_target` or :meth:`socket_target`
        (the rules of ``add``); the transport kind may change. Name, id, settings, grants and
        credential bindings stay; the cached catalog no longer matches the fingerprint, so it is
        stale until the next probe. An OAuth grant is pinned to its URL's origin: another origin
        voids it (``auth status`` says ``needs_auth``, ``origin_changed``) and a login in progress
        is refused. The same target only checks the revision.

        Args:
            expected_revision: the connector revision the caller saw; default the one read now.
            runtime_options: option changes (as for :meth:`update_runtime_options`) written in
                the same revision, for options the new target needs (e.g. ``allow_private``) or
                refuses (``limits`` on a remote one: reset them with ``None``).
            dry_run: check everything and return the connector as it would be stored.

        Raises:
            NotFoundError: ``not_found``.
            BuiltinConnectorError: ``builtin_connector``: a built-in's command is not the user's.
            ConfigError: ``invalid_config``: runtime options or credential bindings the new
                transport does not take (field e.g. ``limits``, ``bindings``), OAuth settings on a
                target that is no URL (field ``target``); nothing stored.
            RevisionConflictError: ``revision_conflict``; nothing stored.
        """
        connector = self.get(name)
        if connector.source == "builtin":
            raise BuiltinConnectorError(
                f"{name} is built in: its command is part of Patchbay (its settings can be changed)",
                details={"connector": name},
            )
        config = merge_runtime_options(connector.runtime_config, runtime_options or {})
        try:
            _checked_options(config, target)
        except ConfigError as exc:
            if exc.field not in _TRANSPORT_BOUND_OPTIONS:
                raise
            # The option was set for the old target: say how to drop it with the same change.
            flag = _TRANSPORT_BOUND_OPTIONS[exc.field]
            raise ConfigError(
                exc.field,
                f"{exc.message.split(': ', 1)[-1]}; {name} has it set for its current target: reset it in the "
                f'same change (CLI: --reset {flag}; REST: "runtime_options": {{"{exc.field}": null}})',
            ) from None
        check_bindings(connector.bindings, target.transport)
        if not isinstance(target, HttpTarget) and oauth_from_config(config) is not None:
            raise ConfigError(
                "target",
                f"{name} has OAuth settings, so its target must stay a URL (streamable_http or sse)",
            )
        if dry_run:
            return connector.model_copy(update={"target": target, "runtime_config": config})
        revision = connector.revision if expected_revision is None else expected_revision
        if target == connector.target and config == connector.runtime_config:
            return self.repository.connectors.update(connector.connector_id, revision)
        updated = self.repository.connectors.update(
            connector.connector_id, revision, target=target, runtime_config=config
        )
        return self._reprojected(updated)

    def _write_config(self, connector: Connector, revision: int, config: dict[str, Any]) -> Connector:
        """Store a new ``runtime_config`` under the revision lock; a fresh tool cache moves along,
        as options and bindings are no part of the server's identity: changing a credential binding
        never empties the cached tool catalog."""
        return self._write(connector, revision, runtime_config=config)

    def _write(self, connector: Connector, revision: int, **fields: Any) -> Connector:
        """Store ``fields`` under the revision lock and move a fresh tool cache to the new revision."""
        updated = self.repository.connectors.update(connector.connector_id, revision, **fields)
        entry = self.repository.tool_cache.get(connector.connector_id)
        if (
            entry
            and entry.config_revision == revision == updated.revision - 1
            and entry.fingerprint == catalog_fingerprint(updated)
        ):
            self.repository.tool_cache.replace(entry.model_copy(update={"config_revision": updated.revision}))
        return updated

    def set_bindings(
        self,
        name: str,
        bindings: Sequence[BindingSpec] = (),
        *,
        unset: Sequence[str] = (),
        expected_revision: int | None = None,
        dry_run: bool = False,
    ) -> Connector:
        """Add, replace (``bindings``) or remove (``unset``: ``env:KEY``, ``header:Name``, ``bearer``)
        credential bindings; see :meth:`patchbay.control.credentials.CredentialService.rebind`.

        A new value for a place already filled by a credential the connector owns replaces that
        value in place (no revision change); other changes bump ``revision`` and keep a fresh tool
        cache. Credentials the connector owns and nothing binds any more are deleted. With
        ``dry_run`` everything is checked and nothing written.

        Raises:
            NotFoundError: ``not_found``.
            ConfigError: ``invalid_config`` (field ``env``, ``header``, ``bearer``, ``unset`` or
                ``bindings``); nothing changed.
            RevisionConflictError: ``revision_conflict``; the credential store is put back.
        """
        connector = self.get(name)
        revision = connector.revision if expected_revision is None else expected_revision
        rebound = self.credentials.rebind(
            connector,
            bindings,
            unset,
            write=lambda config: self._write_config(connector, revision, config),
            dry_run=dry_run,
        )
        return rebound if dry_run else self._reprojected(rebound)

    def effective_runtime_options(self, connector: Connector) -> RuntimeOptions:
        """The options a runtime of this process would apply: unset timeouts filled from settings.

        ``idle_timeout``, ``request_timeout``, ``max_call_seconds`` and ``unresponsive_timeouts``
        left unset on the connector take ``Settings`` values (``PATCHBAY_IDLE_TIMEOUT`` ...; an idle
        timeout of 0 means never).
        """
        options = RuntimeOptions.model_validate(connector.runtime_config)
        timeouts = ("idle_timeout", "request_timeout", "max_call_seconds", "unresponsive_timeouts")
        return options.model_copy(
            update={k: getattr(self.settings, k) for k in timeouts if getattr(options, k) is None}
        )

    def remove(self, name: str) -> Connector:
        """Delete a connector; its grants and cache go with it (FK cascade), and so do the
        credentials it owns.

        Raises:
            NotFoundError, BuiltinConnectorError (``builtin_connector``).
        """
        connector = self.get(name)
        self.credentials.remove_connector(connector, lambda: self.repository.connectors.delete(connector.connector_id))
        return self._reprojected(connector)

    # -- grants -----------------------------------------------------------------------------

    def grant(
        self,
        name: str,
        tool: str,
        decision: str,
        *,
        project: Path | None = None,
        kind: GrantKind = "tool",
        refuse_unknown: bool = False,
    ) -> ToolGrant:
        """Set a global grant, or a project grant when ``project`` is given (idempotent upsert).

        Args:
            tool: the subject in ``kind``'s key space: a tool's original name; a prompt's name or
                ``*`` (every prompt); :data:`~patchbay.core.models.RESOURCE_SUBJECT` for resource
                reads (one grant per connector).
            kind: ``tool``, ``resource`` or ``prompt``.
            refuse_unknown: for a tool grant, refuse a name the connector's fresh cached catalog
                does not list (:meth:`ConnectorQueries.check_tool_name`); without a fresh catalog
                the name cannot be checked and the grant is stored. Off: any name is stored (it
                matches nothing until a probe lists the tool).

        Raises:
            ConfigError: ``invalid_config``: field ``decision`` unless allow|ask|deny (allow|deny
                for a prompt); field ``tool`` for a bad subject, or for the tool name
                ``resources/read``, which once spelled the resource-read grant and is refused so an
                old command cannot grant a server's lookalike tool instead.
            NotFoundError: ``not_found`` for the connector, or with ``refuse_unknown`` for a tool
                the fresh catalog does not list (``details``: ``connector``, ``tool``, ``field``
                ``tool`` and ``suggestions``, the closest cached names); nothing stored.
        """
        choices = _PROMPT_DECISIONS if kind == "prompt" else _DECISIONS
        if decision not in choices:
            raise ConfigError("decision", f"must be one of {', '.join(choices)}; got {decision!r}")
        self._check_subject(tool, kind)
        connector = self.get(name)
        if refuse_unknown and kind == "tool":
            check = self.queries.check_tool_name(connector, tool)
            if check.state == "unknown":
                hint = f"; did you mean: {', '.join(check.suggestions)}?" if check.suggestions else ""
                raise NotFoundError(
                    f"{name} has no tool {tool!r} in its probed catalog{hint} (to grant a tool the server will "
                    'list later, pass --unknown-ok; REST: "unknown_ok": true)',
                    details={"connector": name, "tool": tool, "field": "tool", "suggestions": list(check.suggestions)},
                )
        verdict = cast(GrantDecision, decision)
        if project is None:
            self.repository.grants.set_global(connector.connector_id, tool, decision, kind=kind)
            return self._reprojected(
                ToolGrant(connector_id=connector.connector_id, tool_name=tool, decision=verdict, kind=kind)
            )
        prj = self.queries.project(project)
        self.repository.grants.set_for_project(prj.project_id, connector.connector_id, tool, decision, kind=kind)
        return self._reprojected(
            ToolGrant(
                connector_id=connector.connector_id,
                tool_name=tool,
                decision=verdict,
                project_id=prj.project_id,
                kind=kind,
            ),
            project_id=prj.project_id,
        )

    def clear_grant(self, name: str, tool: str, *, project: Path | None = None, kind: GrantKind = "tool") -> bool:
        """Remove a grant so the subject inherits again; False if there was none.

        Raises:
            ConfigError: ``invalid_config`` (field ``tool``) as :meth:`grant`.
        """
        self._check_subject(tool, kind)
        connector = self.get(name)
        if project is None:
            return self._reprojected(self.repository.grants.clear_global(connector.connector_id, tool, kind=kind))
        prj = self.queries.project(project)
        cleared = self.repository.grants.clear_for_project(prj.project_id, connector.connector_id, tool, kind=kind)
        return self._reprojected(cleared, project_id=prj.project_id)

    @staticmethod
    def _check_subject(tool: str, kind: GrantKind) -> None:
        if kind == "resource":
            if tool != RESOURCE_SUBJECT:
                raise ConfigError(
                    "tool", f"a resource-read grant covers the whole connector (subject {RESOURCE_SUBJECT!r})"
                )
            return
        if not isinstance(tool, str) or not tool or len(tool) > 512 or not tool.isprintable():
            raise ConfigError("tool", "must be 1-512 printable characters")
        if kind == "tool" and tool == _OLD_RESOURCE_KEY:
            raise ConfigError(
                "tool",
                f"{_OLD_RESOURCE_KEY!r} is no longer the resource-read grant and is refused as a tool name: grant "
                "resource reads with `patchbay grant NAME --resources allow|ask|deny` (REST: PUT "
                "/api/mcp/connectors/{connector}/resources/grant); hide a server tool of that name with "
                "--exclude",
            )

    # -- probe ------------------------------------------------------------------------------

    async def probe(self, name: str, *, workspace: Path, **login: Any) -> ProbeResult:
        """Run a real connect probe, store its outcome (:meth:`ConnectorQueries.last_probe`) whatever
        it is, and cache the catalog when it is ready.

        Args:
            workspace: the canonical workspace root (see :meth:`ConnectorQueries.project`); stdio servers run there.
            login: ``authorizer``, ``verify``, ``login_timeout`` for an OAuth login
                (:meth:`patchbay.control.oauth.OAuthService.login`; see :meth:`Prober.probe`).
        """
        connector = self.get(name)
        try:  # the egress audit names the workspace's project by its stable id; a
            # probe does not make the workspace a project (projects get snapshots written)
            project_id: str | None = project_id_for(str(real_dir(workspace)))
        except ConfigError:
            project_id = None  # not a directory: the probe reports it (stdio), or needs none (remote)
        result = await self.prober.probe(connector, workspace=workspace, project_id=project_id, **login)
        self._record_outcome(connector, result)
        if result.state == "ready":
            now = _now_ms()
            self.repository.tool_cache.replace(
                ToolCacheEntry(
                    connector_id=connector.connector_id,
                    config_revision=connector.revision,
                    fingerprint=catalog_fingerprint(connector),
                    tools=result.tools,
                    resources=result.resources,
                    server_info=result.server_info,
                    fetched_at=now,
                    expires_at=now + int(self.settings.tool_cache_ttl * 1000),
                )
            )
            self._reprojected(None)  # the snapshots carry the cached catalog
        return result

    def _record_outcome(self, connector: Connector, result: ProbeResult) -> None:
        """Keep the probe's outcome; a connector removed while it was probed has none to keep."""
        message = redact_text(result.message) if result.message is not None else None
        outcome = ProbeOutcome(
            connector_id=connector.connector_id,
            state="ready" if result.state == "ready" else "error",
            code=result.code,
            message=message,
            tool_count=result.tool_count,
            duration_ms=max(0, result.duration_ms),
            probed_at=_now_ms(),
            config_revision=connector.revision,
            stderr_tail=redact_text(result.stderr_tail),
            protocol_version=result.protocol_version,
        )
        try:
            self.repository.probe_outcomes.record(outcome)
        except NotFoundError:
            pass
