"""Sample content for the demo projects of ``stockade up``, so the console's first look is not empty.

Sent through the services' own HTTP APIs with the demo key, as an agent or CI would: prompt-api gets a prompt
with two versions, a skill and a guardrail policy with two versions in the demo project, and a prompt and a
policy proposal waiting in the Manual review project's queues; guardrail-ingest gets a handful of guardrail runs
(a masked one, a blocked one, a clean one and a trust rejection), each check naming the policy version that
made it. Run once per state directory (a marker file), skipped with ``stockade up --no-demo``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

MARKER = "demo-content.done"
PROMPT = "support-greeting"
SKILL = "refund-policy"
SKILL_MD = """---
name: refund-policy
description: How the support agent handles refund requests.
allowed-tools: [Read]
---
# Refunds

1. Ask for the order id.
2. Refund within 30 days of delivery; after that, offer store credit.
"""


POLICY = "support-bot"
MASK_PII = (
    "# The demo support agent's guardrails.\nguardrails:\n  checks:\n    pii:\n      default_action: mask\n"
)
BLOCK_PII = MASK_PII.replace("default_action: mask", "default_action: block")
POLICY_VERSIONS = (
    ("block PII", BLOCK_PII),
    ("mask PII instead of blocking it: answers stay useful", MASK_PII),
)
"""The demo policy's versions, oldest first (each a guardrails configuration as prompt-api validates it). The
active one masks: publishing a stricter one (or rolling back to version 1) is the demo of ``stockade
demo-agent``."""


def prompt_versions(project_id: str) -> list[dict[str, Any]]:
    """Two versions of one prompt: the second is warmer and sets a temperature, so the diff shows both."""
    first = [
        {"role": "system", "content": "You are the support agent of the demo shop.\nAnswer briefly."},
        {"role": "user", "content": "{question}"},
    ]
    second = [
        {
            "role": "system",
            "content": "You are the friendly support agent of the demo shop.\nAnswer briefly and kindly.\n"
            "Never ask for card numbers.",
        },
        {"role": "user", "content": "{question}"},
    ]
    base = {"project_id": project_id, "prompt_name": PROMPT}
    return [
        {**base, "content": first, "commit_message": "first version"},
        {
            **base,
            "content": second,
            "config": {"temperature": 0.3},
            "commit_message": "warmer, no card numbers",
        },
    ]


def _check(
    run: str, n: int, at: datetime, name: str, action: str, ms: float, score: float, **types: int
) -> dict[str, Any]:
    return {
        "policy_name": POLICY,
        "policy_version": "2",  # the active version (the secret's block is the exfiltration check's)
        "event_id": f"{run}-{n}",
        "kind": "check",
        "name": name,
        "occurred_at": at.isoformat(),
        "session_id": f"sess-{run}",
        "action": action,
        "payload": {"stage": "input", "duration_ms": ms, "score": score, "finding_types": types},
    }


def guardrail_runs(project_id: str, now: datetime | None = None) -> list[dict[str, Any]]:
    """Four runs of the demo project over the last hour: masked PII, a blocked secret, a clean run and a trust
    rejection. Types, counts, scores and actions only: no checked text, as the library stores them."""
    t = (now or datetime.now(UTC)).replace(microsecond=0) - timedelta(hours=1)
    run = {"project_id": project_id, "agent_id": "support-bot", "environment": "demo", "prompt_name": PROMPT}
    masked = [
        _check("demo-masked", 1, t, "pii", "mask", 18.5, 0.94, PERSON=1, EMAIL_ADDRESS=1),
        _check("demo-masked", 2, t + timedelta(milliseconds=25), "toxicity", "allow", 41.0, 0.02),
    ]
    blocked = [
        _check("demo-blocked", 1, t + timedelta(minutes=10), "toxicity", "allow", 39.0, 0.04),
        {
            **_check(
                "demo-blocked", 2, t + timedelta(minutes=10, seconds=2), "exfiltration", "block", 3.1, 0.97
            ),
            "payload": {"stage": "output", "duration_ms": 3.1, "score": 0.97, "finding_types": {"SECRET": 1}},
        },
    ]
    clean = [_check("demo-clean", 1, t + timedelta(minutes=20), "pii", "allow", 12.0, 0.0)]
    trust = [
        {
            "event_id": "demo-trust-1",
            "kind": "trust",
            "name": "verify_message",
            "occurred_at": (t + timedelta(minutes=30)).isoformat(),
            "action": "block",
            "payload": {
                "layer": "A",
                "reason": "sender trust level restricted is below the floor trusted",
                "sender": "executor",
            },
        }
    ]
    return [
        {"run": {**run, "run_id": "demo-masked", "prompt_version": "2"}, "events": masked},
        {"run": {**run, "run_id": "demo-blocked", "prompt_version": "2"}, "events": blocked},
        {"run": {**run, "run_id": "demo-clean", "prompt_version": "1"}, "events": clean},
        {"run": {**run, "run_id": "demo-trust", "agent_id": "planner"}, "events": trust},
    ]


async def _post(client: httpx.AsyncClient, path: str, body: dict[str, Any], key: str | None = None) -> None:
    headers = {"X-API-Key": key} if key else {}
    answer = await client.post(path, json=body, headers=headers)
    if answer.status_code not in (200, 201, 202):
        raise RuntimeError(f"POST {path}: {answer.status_code} {answer.text[:200]}")


async def seed_prompts(
    prompt_api: httpx.AsyncClient, key: str, project_id: str, review_project_id: str
) -> None:
    for body in prompt_versions(project_id):
        await _post(prompt_api, "/prompts/active-prompt-version", body, key)
    skill = {
        "project_id": project_id,
        "skill_name": SKILL,
        "skill_md": SKILL_MD,
        "commit_message": "first version",
    }
    await _post(prompt_api, "/skills/active-version", skill, key)
    if review_project_id:
        first, second = prompt_versions(review_project_id)
        await _post(prompt_api, "/prompts/active-prompt-version", first, key)  # the demo user is an approver
        proposal = {k: second[k] for k in ("project_id", "content", "config", "commit_message")}
        await _post(prompt_api, f"/prompts/{PROMPT}/proposals", proposal, key)


async def seed_policies(
    prompt_api: httpx.AsyncClient, key: str, project_id: str, review_project_id: str
) -> None:
    """The demo policy (two versions, the second active) in the demo project; in the Manual review project its
    first version and the second one proposed, waiting in the policy review queue."""
    for message, text in POLICY_VERSIONS:
        body = {"project_id": project_id, "policy_name": POLICY, "yaml": text, "commit_message": message}
        await _post(prompt_api, "/policies/active-version", body, key)
    if review_project_id:
        (first_message, first), (second_message, second) = POLICY_VERSIONS
        body = {"project_id": review_project_id, "policy_name": POLICY, "yaml": first}
        await _post(prompt_api, "/policies/active-version", {**body, "commit_message": first_message}, key)
        proposal = {"project_id": review_project_id, "yaml": second, "commit_message": second_message}
        await _post(prompt_api, f"/policies/{POLICY}/proposals", proposal, key)


async def seed_runs(ingest: httpx.AsyncClient, project_id: str) -> None:
    db_type = (await ingest.get("/api/v1/db_type")).json()["db_type"]
    for batch in guardrail_runs(project_id):
        await _post(ingest, f"/api/v1/guardrails/{db_type}", batch)
