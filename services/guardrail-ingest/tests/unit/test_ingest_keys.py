"""IngestKeyVerifier without a bus: what is refused before any question, the deployment-wide key, failing closed.

The questions to model-api, the cache and revocations run on real NATS: tests/e2e/test_ingest_keys.py and
tests/integration/test_under_deploy_nats_permissions.py."""

from __future__ import annotations

import pytest

from stockade.guardrail_ingest.ingest_keys import (
    ANY_PROJECT,
    IngestKeyVerifier,
    KeyRejected,
    VerifierUnavailable,
)
from stockade.guardrail_ingest.settings import GuardrailIngestSettings, IngestSettings

WELL_FORMED = "stk_" + "A" * 50


def test_per_project_keys_are_the_default() -> None:
    assert GuardrailIngestSettings().ingest.auth == "keys"
    assert GuardrailIngestSettings().ingest.api_key is None


@pytest.mark.parametrize("presented", [None, "", "x", "stk_short", "stk_" + "-" * 50, "stk_" + "é" * 50])
async def test_missing_or_malformed_keys_are_refused_without_a_question(presented: str | None) -> None:
    verifier = IngestKeyVerifier(IngestSettings())  # no NATS: a question would be VerifierUnavailable
    with pytest.raises(KeyRejected):
        await verifier.verify(presented)


async def test_the_deployment_wide_key_opens_every_project_and_only_it_does() -> None:
    verifier = IngestKeyVerifier(IngestSettings(api_key="dev-key-0123456789"))
    assert await verifier.verify("dev-key-0123456789") is ANY_PROJECT
    with pytest.raises(KeyRejected):
        await verifier.verify("dev-key-012345678")


async def test_a_well_formed_key_without_the_key_owner_fails_closed() -> None:
    with pytest.raises(VerifierUnavailable):
        await IngestKeyVerifier(IngestSettings()).verify(WELL_FORMED)
