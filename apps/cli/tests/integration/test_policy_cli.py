"""``stockade policy publish | diff | rollback`` as a person keeping policies in git runs it: the real command (a
subprocess, its exit code and its two output streams) against a real prompt-api on PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from stockade import identity
from stockade.prompt_api.main import create_app
from stockade.prompt_api.migrate import upgrade
from stockade.prompt_api.settings import PromptApiSettings
from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings
from stockade.testing.asgi import serving
from stockade.testing.ports import free_port

pytestmark = [pytest.mark.postgres, pytest.mark.nats]

MASKING = "guardrails:\n  checks:\n    pii:\n      default_action: mask\n"
BLOCKING = "guardrails:\n  checks:\n    pii:\n      default_action: block\n"


@dataclass
class Done:
    code: int
    out: str
    err: str


@dataclass
class Api:
    url: str
    project: str
    write_key: str
    read_key: str
    reviewed: str = ""  # a Manual review project: dev is a member without the approver tag


async def _seed(db_url: str) -> tuple[str, str, str, str]:
    engine = create_engine(db_url)
    try:
        async with session_factory(engine)() as s:
            org = await identity.create_organisation(s, "acme")
            dev = await identity.create_user(s, "dev@example.com")
            project = await identity.create_project(s, org.id, "agents")
            reviewed = await identity.create_project(s, org.id, "reviewed", "manual-review")
            for member_of in (project, reviewed):
                await identity.add_project_member(s, member_of.id, dev.id)
            write = await identity.create_api_key(s, dev.id, scope="write")
            read = await identity.create_api_key(s, dev.id, scope="read")
            await s.commit()
    finally:
        await engine.dispose()
    return project.id, write.key, read.key, reviewed.id


@pytest.fixture
async def api(postgres_database, nats_url):
    await asyncio.to_thread(upgrade, postgres_database)
    project, write_key, read_key, reviewed = await _seed(postgres_database)
    settings = PromptApiSettings(
        db=DatabaseSettings(url=postgres_database),
        nats=NatsSettings(url=nats_url, connect_timeout_s=1),
        http=HttpSettings(port=free_port()),
        migrate_on_startup=False,
        gc_freeze=False,
    )
    async with serving(create_app(settings)) as url:
        yield Api(url, project, write_key, read_key, reviewed)


async def stockade(api: Api, *args: str, key: str | None = None) -> Done:
    env = {**os.environ, "STOCKADE_PROMPT_API_URL": api.url, "STOCKADE_API_KEY": key or api.write_key}
    if key == "":
        env.pop("STOCKADE_API_KEY")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "stockade.cli.main",
        "policy",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return Done(proc.returncode, out.decode(), err.decode())


def where(api: Api) -> tuple[str, ...]:
    return ("--project", api.project, "--name", "support-bot")


async def test_publish_diff_and_rollback_from_a_file_in_git(api, tmp_path: Path):
    policy = tmp_path / "support-bot.yaml"
    policy.write_text(MASKING)
    first = await stockade(api, "publish", str(policy), *where(api), "-m", "mask PII")
    assert first.code == 0, first.err
    assert "support-bot version 1 is active (its first version)" in first.out
    assert "publishing" in first.err  # progress on stderr, the result on stdout

    again = await stockade(api, "publish", str(policy), *where(api))
    assert again.code == 0 and "unchanged: version 1" in again.out  # nothing published twice

    policy.write_text(BLOCKING)
    diff = await stockade(api, "diff", str(policy), *where(api))
    assert diff.code == 1  # differs, as diff(1) says it
    assert "-      default_action: mask" in diff.out and "+      default_action: block" in diff.out
    assert "support-bot version 1 (active)" in diff.out

    second = await stockade(api, "publish", str(policy), *where(api), "-m", "block PII")
    assert second.code == 0 and "version 2 is active (was version 1)" in second.out
    same = await stockade(api, "diff", str(policy), *where(api))
    assert same.code == 0 and same.out == "" and "no difference" in same.err
    older = await stockade(api, "diff", str(policy), *where(api), "--version", "1")
    assert older.code == 1 and "support-bot version 1\n" in older.out

    back = await stockade(api, "rollback", *where(api), "--version", "1")
    assert back.code == 0 and "version 3 is active, the content of version 1" in back.out
    policy.write_text(MASKING)
    assert (await stockade(api, "diff", str(policy), *where(api))).code == 0


async def test_errors_say_what_and_exit_with_their_code(api, tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("guardrails:\n  checks:\n    pii:\n      default_action: explode\n")
    refused = await stockade(api, "publish", str(bad), *where(api))
    assert refused.code == 3 and refused.out == ""
    assert "guardrails.checks.pii.default_action" in refused.err  # the key path of the problem

    secret = tmp_path / "secret.yaml"
    secret.write_text("guardrails:\n  storage:\n    api_key: hunter2-hunter2\n")
    leaked = await stockade(api, "publish", str(secret), *where(api))
    assert leaked.code == 3 and "secret" in leaked.err and "hunter2" not in leaked.err

    missing = await stockade(api, "publish", str(tmp_path / "nope.yaml"), *where(api))
    assert missing.code == 2 and "no such file" in missing.err
    no_key = await stockade(api, "publish", str(bad), *where(api), key="")
    assert no_key.code == 2 and "STOCKADE_API_KEY" in no_key.err

    good = tmp_path / "good.yaml"
    good.write_text(MASKING)
    reader = await stockade(api, "publish", str(good), *where(api), key=api.read_key)
    assert reader.code == 3 and "403" in reader.err
    nothing = await stockade(api, "diff", str(good), *where(api))
    assert nothing.code == 3 and "no active version" in nothing.err
    unknown = await stockade(api, "rollback", *where(api), "--version", "7")
    assert unknown.code == 3

    # a Manual review project: publishing needs the approver tag, proposing does not
    review = ("--project", api.reviewed, "--name", "support-bot")
    tagless = await stockade(api, "publish", str(good), *review)
    assert tagless.code == 3 and "--propose" in tagless.err
    proposed = await stockade(api, "publish", str(good), *review, "--propose", "-m", "mask PII")
    assert proposed.code == 0 and "waits for an approver in the policy review queue" in proposed.out

    down = Api(f"http://127.0.0.1:{free_port()}", api.project, api.write_key, api.read_key)
    unreachable = await stockade(down, "publish", str(good), *where(down))
    assert unreachable.code == 4 and "unavailable" in unreachable.err
