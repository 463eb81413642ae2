"""Demo data of the embedded stack: the seeded organisation, key and console user, and a demo agent registry."""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

DEMO_AGENTS = (("planner", "trusted", "search, summarize"), ("executor", "restricted", "summarize"))


@dataclass
class DemoInfo:
    api_key: str
    project_id: str
    user: str = ""
    console_password: str = ""
    review_project_id: str = ""  # the Manual review project (empty in demo.json files written before it)
    ingest_key: str = ""  # the demo project's ingest key (guardrail-ingest; STOCKADE_INGEST_KEY for agents)
    platform_admin: bool = False  # the demo user was made a platform administrator (once: a revoke holds)


def prepare_database(state_dir: Path, db_url: str) -> DemoInfo | None:
    """Migrate the SQLite database and seed demo data when empty; returns the demo key when one exists."""
    from stockade.identity.seed import DemoSeed, seed_demo
    from stockade.prompt_api.migrate import upgrade  # identity tables first, then prompt-api's
    from stockade.runtime.db import create_engine, session_factory

    state_dir.mkdir(parents=True, exist_ok=True)
    upgrade(db_url)
    demo_file = state_dir / "demo.json"

    async def seed() -> DemoSeed | None:
        engine = create_engine(db_url)
        try:
            return await seed_demo(session_factory(engine))
        finally:
            await engine.dispose()

    demo = asyncio.run(seed())
    if demo is not None:
        info = DemoInfo(
            api_key=demo.api_key_plaintext,
            project_id=demo.project_id,
            user=demo.user.email,
            console_password=demo.console_password,
            review_project_id=demo.review_project_id,
            ingest_key=demo.ingest_key_plaintext,
            platform_admin=True,  # seed_demo grants it
        )
        # Demo convenience for the embedded stack only: the demo key is kept in a 0600 file so later
        # `stockade up` runs can print it again. Real keys are shown once and stored only as SHA-256.
        demo_file.touch(mode=0o600)
        demo_file.write_text(json.dumps(asdict(info)) + "\n")
        return info
    if demo_file.exists():
        info = DemoInfo(**json.loads(demo_file.read_text()))
        if not info.ingest_key and info.user:  # a state directory from before ingest keys: issue one now
            info.ingest_key = asyncio.run(_demo_ingest_key(db_url, info))
            demo_file.write_text(json.dumps(asdict(info)) + "\n")
        if not info.platform_admin and info.user:  # a state directory from before the role: grant it once
            asyncio.run(_grant_platform_admin(db_url, info.user))
            info.platform_admin = True
            demo_file.write_text(json.dumps(asdict(info)) + "\n")
        return info
    return None


async def _grant_platform_admin(db_url: str, user: str) -> None:
    from stockade.identity import grant_platform_admin
    from stockade.runtime.db import create_engine, session_factory
    from stockade.runtime.uow import UnitOfWork

    engine = create_engine(db_url)
    try:
        async with UnitOfWork(session_factory(engine)) as uow:
            await grant_platform_admin(uow.session, user)
    finally:
        await engine.dispose()


async def _demo_ingest_key(db_url: str, info: DemoInfo) -> str:
    from stockade.identity import Scope, create_api_key
    from stockade.runtime.db import create_engine, session_factory
    from stockade.runtime.uow import UnitOfWork

    engine = create_engine(db_url)
    try:
        async with UnitOfWork(session_factory(engine)) as uow:
            project = info.project_id
            key = await create_api_key(uow.session, info.user, scope=Scope.INGEST.value, project=project)
        return key.key
    finally:
        await engine.dispose()


def ensure_trust_config(state_dir: Path, project_id: str | None = None) -> Path:
    """A demo agent registry for the embedded trust-broker, with fresh random HMAC secrets (files, 0600). The
    agents work for ``project_id`` (the demo project): the audit trail files their trust rejections there."""
    path = state_dir / "trust.yaml"
    if path.exists():
        return path
    secrets_dir = state_dir / "agent-keys"
    secrets_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines = [
        "# Demo agent registry of the embedded stack (stockade up). Edit freely: the broker reloads it.",
        "# Each agent's HMAC secret is in agent-keys/<agent>-demo-1 (random, 0600).",
        "guardrails:",
        "  trust:",
        "    policy:",
        "      min_sender_trust: restricted",
        "    agents:",
    ]
    for agent, trust, capabilities in DEMO_AGENTS:
        secret_file = secrets_dir / f"{agent}-demo-1"
        secret_file.touch(mode=0o600)
        secret_file.write_text(secrets.token_hex(32) + "\n")
        lines += [
            f"      - id: {agent}",
            f"        trust: {trust}",
            f"        capabilities: [{capabilities}]",
            *([f"        project: {json.dumps(project_id)}"] if project_id else []),
            "        keys:",
            f"          - {{id: demo-1, secret_file: {secret_file}}}",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_guardrails_config(path: Path, toxicity_url: str) -> Path:
    """A guardrails configuration for agents trying the embedded stack: the toxicity check switched on and
    pointed at the stack's toxicity-classifier. Rewritten on every start (the port may change)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Written by `stockade up` on every start: copy this file to change it.",
        "# GuardrailSystem(path) runs the content checks with the toxicity check calling the embedded",
        "# toxicity-classifier; every other setting keeps its default (libs/guardrails/README.md).",
        "guardrails:",
        "  checks:",
        "    toxicity:",
        "      enabled: true",
        f"      url: {json.dumps(toxicity_url)}",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path
