"""The guardrails library's real toxicity check calls this service over HTTP: a hateful text is blocked, an
insult warned about, a neutral text passes; with a key configured, only a system holding it gets through."""

from __future__ import annotations

from typing import Any

from stockade.guardrails import Action, GuardrailSystem

KEY = "test-bearer-key-0123456789"
OTHER_CHECKS_OFF = {
    "pii": {"enabled": False},
    "classification": {"enabled": False},
    "exfiltration": {"enabled": False},
}


def system(url: str, **toxicity: Any) -> GuardrailSystem:
    tox = {"enabled": True, "url": f"{url}/classify", "retries": 0, **toxicity}
    return GuardrailSystem({"guardrails": {"checks": {**OTHER_CHECKS_OFF, "toxicity": tox}}})


async def test_toxic_blocks_offensive_warns_neutral_passes(service_url):
    guard = system(service_url)
    try:
        hateful = await guard.check_input("those people are subhuman animals, kill them all")
        insult = await guard.check_output("you are a worthless piece of shit")
        neutral = await guard.check_input("Thanks for the help with my tax forms, have a lovely weekend")
    finally:
        await guard.aclose()
    assert hateful.blocked and hateful.action is Action.BLOCK
    assert [(f.check, f.type) for f in hateful.findings] == [("toxicity", "toxic")]
    assert insult.passed and insult.action is Action.WARN
    assert [(f.check, f.type) for f in insult.findings] == [("toxicity", "offensive")]
    assert neutral.passed and neutral.action is Action.ALLOW and neutral.findings == []


async def test_the_bearer_key_of_the_check_config_opens_a_keyed_service(keyed_service_url):
    keyed = system(keyed_service_url, api_key=KEY)
    keyless = system(keyed_service_url)
    try:
        allowed = await keyed.check_input("see you at the lake on Sunday")
        refused = await keyless.check_input("see you at the lake on Sunday")
    finally:
        await keyed.aclose()
        await keyless.aclose()
    assert allowed.passed and allowed.action is Action.ALLOW
    assert refused.blocked and "toxicity" in (refused.error or "")  # 401: the check fails, input fails closed
