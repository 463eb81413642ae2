"""The trust package exports exactly its public API, and the top-level package re-exports the main names."""

import stockade.guardrails as g
import stockade.guardrails.trust as trust


def test_trust_all_matches_public_names():
    public = {
        n for n in dir(trust) if not n.startswith("_") and not isinstance(getattr(trust, n), type(trust))
    }
    assert set(trust.__all__) - {"JetStreamNonceStore"} == public - {"annotations", "TYPE_CHECKING", "Any"}
    for name in trust.__all__:
        assert getattr(trust, name) is not None


def test_top_level_reexports_are_the_same_objects():
    for name in (
        "AgentTrustEnforcer",
        "AgentRegistry",
        "AttestationVerifier",
        "GuardrailPolicy",
        "TrustLevel",
    ):
        assert name in g.__all__ and getattr(g, name) is getattr(trust, name)
