"""TrustBrokerService and EnforcerProvider without NATS: decisions, event contents, reload behaviour."""

import os

import pytest

from stockade.contracts import subjects
from stockade.guardrails.errors import AttestationError, ConfigError
from stockade.guardrails.trust import AttestationVerifier, InMemoryNonceStore, KeyRing, trust_config_from_path
from stockade.trust_broker import wire
from stockade.trust_broker.reloading import EnforcerProvider
from stockade.trust_broker.service import UNAVAILABLE, TrustBrokerService


@pytest.fixture
def provider(trust_yaml):
    return EnforcerProvider(trust_yaml, InMemoryNonceStore())


@pytest.fixture
def signer(trust_yaml):
    cfg = trust_config_from_path(trust_yaml)
    return AttestationVerifier(KeyRing.from_config(cfg), config=cfg.attestation)


async def test_delivery_carries_the_verified_identity(provider, signer):
    service = TrustBrokerService(provider)
    env = signer.sign("planner", "executor", b"body", capability="summarize")
    decision = await service.handle(
        subjects.trust_submit("executor"), {wire.ATTESTATION: env.to_json()}, b"body"
    )
    assert decision.rejection is None and decision.delivery is not None
    assert decision.delivery.subject == "agent.executor.inbox" and decision.delivery.body == b"body"
    assert decision.delivery.headers == {
        wire.SENDER: "planner",
        wire.SENDER_TRUST: "trusted",
        wire.CAPABILITY: "summarize",
        wire.NONCE: env.nonce,
        wire.KEY_ID: "k1",
    }
    assert decision.reply.as_json() == {"status": "delivered", "receiver": "executor", "nonce": env.nonce}


async def test_submit_subject_must_match_the_signed_receiver(provider, signer):
    env = signer.sign("planner", "executor", b"body")
    decision = await TrustBrokerService(provider).handle(
        subjects.trust_submit("treasurer"), {wire.ATTESTATION: env.to_json()}, b"body"
    )
    assert decision.delivery is None
    event = decision.rejection
    assert (event.reason, event.layer, event.sender, event.receiver) == (
        "wrong_receiver",
        "B",
        "planner",
        "treasurer",
    )
    assert event.correlation_id == env.nonce and event.subject == subjects.TRUST_REJECTED


async def test_a_rejection_is_filed_under_the_receivers_project_else_the_senders(
    trust_yaml, write_trust_yaml, signer
):
    write_trust_yaml(trust_yaml, executor={"project": "payments"}, intern={"project": "research"})
    service = TrustBrokerService(EnforcerProvider(trust_yaml, InMemoryNonceStore()))

    async def rejected(sender: str, receiver: str, submit_to: str) -> object:
        env = signer.sign(sender, receiver, b"body")
        decision = await service.handle(
            subjects.trust_submit(submit_to), {wire.ATTESTATION: env.to_json()}, b"tampered"
        )
        assert decision.delivery is None and decision.rejection is not None
        return decision.rejection.project_id

    assert await rejected("intern", "executor", "executor") == "payments"  # the receiver's project
    assert await rejected("intern", "treasurer", "treasurer") == "research"  # it names none: the sender's
    assert await rejected("planner", "treasurer", "treasurer") is None  # neither names one
    assert await rejected("intern", "nobody", "nobody") == "research"  # an unknown receiver has no project
    bare = await service.handle(subjects.trust_submit("executor"), None, b"body")
    assert bare.rejection.project_id == "payments"  # no envelope at all: still the receiver's
    # A forged envelope (a made-up key) claiming the intern: never filed under the intern's project (L2).
    from stockade.guardrails.trust import AttestationVerifier, KeyRing

    forged = AttestationVerifier(KeyRing({"intern": {"k1": b"f" * 32}})).sign("intern", "treasurer", b"x")
    decision = await service.handle(
        subjects.trust_submit("treasurer"), {wire.ATTESTATION: forged.to_json()}, b"x"
    )
    assert decision.rejection is not None and decision.rejection.reason == "bad_signature"
    assert decision.rejection.project_id is None


async def test_missing_header_is_malformed(provider):
    decision = await TrustBrokerService(provider).handle(subjects.trust_submit("executor"), None, b"body")
    assert decision.rejection.reason == "malformed" and decision.rejection.sender is None
    assert decision.reply.status == "rejected"


async def test_unavailable_nonce_store_fails_closed(trust_yaml, signer):
    class Down:
        async def claim(self, key: str, expires_at: float) -> bool:
            raise AttestationError("nonce store unavailable: timeout")

    service = TrustBrokerService(EnforcerProvider(trust_yaml, Down()))
    env = signer.sign("planner", "executor", b"body")
    decision = await service.handle(
        subjects.trust_submit("executor"), {wire.ATTESTATION: env.to_json()}, b"body"
    )
    assert decision.delivery is None and decision.rejection.reason == UNAVAILABLE


async def test_reload_changes_the_registry_and_keeps_nonces(provider, signer, trust_yaml, write_trust_yaml):
    service = TrustBrokerService(provider)
    env = signer.sign("planner", "executor", b"once")
    headers = {wire.ATTESTATION: env.to_json()}
    assert (await service.handle(subjects.trust_submit("executor"), headers, b"once")).delivered

    write_trust_yaml(trust_yaml, planner={"trust": "untrusted"})
    os.utime(trust_yaml, ns=(1, 1))  # a different mtime even on coarse file systems
    assert provider.reload_if_changed() and provider.version == 2
    assert not provider.reload_if_changed()
    env2 = signer.sign("planner", "executor", b"two")
    demoted = await service.handle(
        subjects.trust_submit("executor"), {wire.ATTESTATION: env2.to_json()}, b"two"
    )
    assert demoted.rejection.reason == "trust_too_low"

    write_trust_yaml(trust_yaml)
    assert provider.reload() is None
    replay = await service.handle(subjects.trust_submit("executor"), headers, b"once")
    assert replay.rejection.reason == "replay"  # the nonce store survives reloads


async def test_bad_reload_keeps_the_previous_configuration(provider, trust_yaml):
    trust_yaml.write_text(
        "guardrails: {trust: {agents: [{id: a, keys: [{id: k, secret_env: NOT_SET_ANYWHERE}]}]}}"
    )
    error = provider.reload()
    assert error is not None and "secret_env" in error
    assert len(provider.current.registry) == 4 and provider.version == 1


def test_first_load_must_succeed(tmp_path):
    with pytest.raises(ConfigError):
        EnforcerProvider(tmp_path / "missing.yaml", InMemoryNonceStore())


async def test_receiver_token_that_is_not_an_agent_id_is_rejected(provider, signer):
    env = signer.sign("planner", "executor", b"body")
    decision = await TrustBrokerService(provider).handle(
        "trust.submit.ex@cutor", {wire.ATTESTATION: env.to_json()}, b"body"
    )
    assert decision.delivery is None
    assert (decision.rejection.reason, decision.rejection.receiver) == ("malformed", "ex@cutor")
