"""The gateway token: the bearer token that opens ``/mcp`` on ``patchbay serve`` and nothing else.

The API token (:mod:`patchbay.adapters.api_token`) opens the whole REST API, which registers local
commands this machine then runs; a remote MCP host needs the gateway only. So remote hosts get
their own token: accepted on ``/mcp`` only, never on ``/api`` or the settings page
(:mod:`patchbay.interfaces.api.auth` enforces where).

Usage::

    tokens = GatewayTokens(CredentialStore(settings.home))
    issued = tokens.ensure()        # IssuedGatewayToken on first need (show it now), else None
    issued = tokens.rotate()        # a new one; the old one stops working at once
    tokens.accepts(supplied)        # per request: the token a client sent is the current one
    tokens.adopt(token)             # another data home's token (instances behind one balancer)

Contract:

* the token is ``pbgw_`` and 43 URL-safe characters (:func:`secrets.token_urlsafe` of 32
  bytes), so a person, a log scanner and :func:`~patchbay.core.redaction.redact_text` can tell
  it from the API token;
* it lives in the credential store (``credentials.json``, mode 0600,
  :class:`~patchbay.adapters.credentials.IssuedToken` under the name ``gateway``) as its SHA-256
  only: never the token itself, never in the database, an event, a log or an API answer. It is
  shown once, by whoever makes it (``serve --allow-remote`` on first need, ``gateway token
  --rotate``); after that it exists, and the only way to a token again is a new one;
* :meth:`GatewayTokens.accepts` compares digests in constant time and sees a rotation made by
  another process at its next call (the store is checked on every call, its parse cached on the
  file's identity), so a running ``serve`` refuses the old token as soon as it is replaced;
* a store that cannot be read accepts nothing (``accepts`` is False), it never fails open;
* :meth:`GatewayTokens.adopt` stores a token made elsewhere (every instance of one deployment
  takes the same one); it must have the shape above.

Errors: :meth:`GatewayTokens.ensure`, :meth:`GatewayTokens.rotate`, :meth:`GatewayTokens.adopt`
and :meth:`GatewayTokens.status` raise :class:`~patchbay.core.errors.CanonicalStateUnavailable`
(``canonical_state_unavailable``) when the credential store cannot be locked, read or written;
:meth:`GatewayTokens.adopt` raises :class:`~patchbay.core.errors.ValidationError`
(``validation_error``, field ``token``) for a value that is not a gateway token.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from patchbay.adapters.credentials import CredentialStore, IssuedToken
from patchbay.core.errors import CanonicalStateUnavailable, ValidationError
from patchbay.core.redaction import register_secret

__all__ = ["GATEWAY_TOKEN_NAME", "GATEWAY_TOKEN_PREFIX", "GatewayTokens", "IssuedGatewayToken"]

GATEWAY_TOKEN_NAME = "gateway"
"""Its name among the credential store's issued tokens."""
GATEWAY_TOKEN_PREFIX = "pbgw_"
"""What every gateway token starts with."""

_SHAPE = re.compile(rf"{GATEWAY_TOKEN_PREFIX}[A-Za-z0-9_-]{{43}}")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


@dataclass(frozen=True, repr=False)
class IssuedGatewayToken:
    """A gateway token just made: ``token`` is shown to the user once and never kept.

    ``created_at``: Unix milliseconds; ``replaced``: whether it took the place of an earlier one.
    """

    token: str
    created_at: int
    replaced: bool

    def __repr__(self) -> str:
        return f"IssuedGatewayToken(created_at={self.created_at}, replaced={self.replaced})"


class GatewayTokens:
    """The data home's gateway token (see the module docstring).

    Args:
        store: the data home's credential store.
    """

    def __init__(self, store: CredentialStore) -> None:
        self.store = store

    def status(self) -> int | None:
        """When the current token was made (Unix milliseconds), or None when there is none.

        Raises:
            CanonicalStateUnavailable: the credential store cannot be read.
        """
        record = self.store.issued_token(GATEWAY_TOKEN_NAME)
        return None if record is None else record.created_at

    def ensure(self) -> IssuedGatewayToken | None:
        """Make the gateway token if there is none: the new one (to show now), else None.

        Two processes doing this at once make one token: the check and the write share the
        store's lock.

        Raises:
            CanonicalStateUnavailable: the credential store cannot be locked, read or written.
        """
        with self.store.transaction():
            if self.store.issued_token(GATEWAY_TOKEN_NAME) is not None:
                return None
            return self._issue()

    def rotate(self) -> IssuedGatewayToken:
        """A new gateway token in place of the current one (if any), which stops working at once,
        for running servers too.

        Raises:
            CanonicalStateUnavailable: the credential store cannot be locked, read or written.
        """
        with self.store.transaction():
            return self._issue()

    def adopt(self, token: str) -> IssuedGatewayToken:
        """Make ``token`` (surrounding whitespace ignored) the gateway token, in place of the
        current one: a token another instance of the same deployment made and showed, so a
        host's one token opens ``/mcp`` on each of them.

        Raises:
            ValidationError: ``validation_error`` (field ``token``) when ``token`` is not
                ``pbgw_`` and 43 URL-safe characters (the message never quotes it).
            CanonicalStateUnavailable: the credential store cannot be locked, read or written.
        """
        token = token.strip()
        if _SHAPE.fullmatch(token) is None:
            raise ValidationError(
                f"that is not a gateway token ({GATEWAY_TOKEN_PREFIX} and 43 URL-safe characters, as "
                "`patchbay gateway token --rotate` prints)",
                details={"field": "token"},
            )
        with self.store.transaction():
            return self._issue(token)

    def _issue(self, token: str | None = None) -> IssuedGatewayToken:
        token = token or GATEWAY_TOKEN_PREFIX + secrets.token_urlsafe(32)
        register_secret(token)  # this process masks it wherever it could be logged
        record = IssuedToken(sha256=_digest(token), created_at=self.store.now())
        previous = self.store.replace_issued_token(GATEWAY_TOKEN_NAME, record)
        return IssuedGatewayToken(token=token, created_at=record.created_at, replaced=previous is not None)

    def accepts(self, supplied: str) -> bool:
        """Whether ``supplied`` (the bearer credentials a client sent) is the current gateway token.

        Constant time in what was sent (digests are compared); False when there is no token or
        the store cannot be read. Never raises, never logs what was sent.
        """
        try:
            record = self.store.issued_token(GATEWAY_TOKEN_NAME)
        except CanonicalStateUnavailable:
            return False
        if record is None:
            return False
        return hmac.compare_digest(_digest(supplied), record.sha256)
