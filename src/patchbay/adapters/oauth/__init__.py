"""OAuth 2.1 for remote connectors, on the SDK's providers.

:mod:`.storage` keeps tokens in the CredentialStore; :mod:`.callback` is the loopback redirect
endpoint; :mod:`.relay` routes redirects that reach the REST API's callback route; :mod:`.provider` runs the SDK's providers behind the egress guard; :mod:`.build` picks
and builds the provider for a connector's :class:`~patchbay.core.oauth.OAuthConfig`.
"""

from patchbay.adapters.oauth.callback import STATE_TTL, LoopbackCallback
from patchbay.adapters.oauth.provider import AUDIT_NOTE, Authorizer, PatchbayOAuthProvider
from patchbay.adapters.oauth.relay import CallbackRelay, RelayedCallback, relayed
from patchbay.adapters.oauth.storage import BundleStorage, bundle_of, find_bundle

__all__ = [
    "AUDIT_NOTE",
    "STATE_TTL",
    "Authorizer",
    "BundleStorage",
    "CallbackRelay",
    "LoopbackCallback",
    "PatchbayOAuthProvider",
    "RelayedCallback",
    "bundle_of",
    "find_bundle",
    "relayed",
]
