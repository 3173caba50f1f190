"""The elicitation modes a host declared, as the gateway reads its ``initialize`` capabilities."""

from __future__ import annotations

import mcp_types as types

from patchbay.interfaces.gateway.elicitation import declared_modes


def test_the_declared_modes_follow_the_hosts_elicitation_capability() -> None:
    def modes(elicitation: types.ElicitationCapability | None) -> frozenset[str]:
        return declared_modes(types.ClientCapabilities(elicitation=elicitation))

    assert declared_modes(None) == frozenset()
    assert modes(None) == frozenset()
    assert modes(types.ElicitationCapability()) == {"form"}  # `elicitation: {}` is form mode
    assert modes(types.ElicitationCapability(form=types.FormElicitationCapability())) == {"form"}
    assert modes(types.ElicitationCapability(url=types.UrlElicitationCapability())) == {"url"}
    both = types.ElicitationCapability(form=types.FormElicitationCapability(), url=types.UrlElicitationCapability())
    assert modes(both) == {"form", "url"}
