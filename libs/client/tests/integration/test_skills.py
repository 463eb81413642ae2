"""Skills through the client: publish with text and binary files, list, metadata, files, versions, ETag."""

import pytest

from stockade.client import AsyncStockadeClient, StockadeClient

pytestmark = [pytest.mark.postgres, pytest.mark.nats]

SKILL_MD = """---
name: incident-response
description: Handle production incidents step by step.
license: Apache-2.0
allowed-tools: [Bash, Read]
---
# Incident response

Read references/severity.md first.
"""
PNG = bytes(range(256))


def test_publish_list_read_skill_files_and_versions(world):
    p = world.project_id
    with StockadeClient(world.write_key, http_client=world.http()) as client:
        v1 = client.publish_skill(
            p,
            "incident-response",
            SKILL_MD,
            {"references/severity.md": "# Severity\nSEV1 is bad.\n", "assets/diagram.png": PNG},
            "first",
        )
        assert v1.version == 1 and v1.front_matter["name"] == "incident-response"
        sizes = {f.path: f.size for f in v1.files}
        assert sizes == {"SKILL.md": len(SKILL_MD), "references/severity.md": 24, "assets/diagram.png": 256}

        [summary] = client.list_skills(p)
        assert (summary.skill_name, summary.active_version) == ("incident-response", 1)
        assert summary.description == "Handle production incidents step by step."

        assert client.get_skill_file(p, "incident-response", "assets/diagram.png") == PNG
        assert client.get_skill_file(p, "incident-response", "SKILL.md").decode() == SKILL_MD
        world.responses.clear()
        assert client.get_skill_file(p, "incident-response", "SKILL.md").decode() == SKILL_MD
        assert [r.status_code for r in world.responses] == [304]

        v2 = client.publish_skill(p, "incident-response", SKILL_MD.replace("first", "twice"))
        assert v2.version == 2 and [f.path for f in v2.files] == ["SKILL.md"]
        detail = client.get_skill(p, "incident-response")
        assert (detail.version, detail.active_version) == (2, 2)
        assert [h.version for h in detail.history] == [2, 1]
        assert client.get_skill(p, "incident-response", version=1).files == v1.files
        old = client.get_skill_file(p, "incident-response", "references/severity.md", version=1)
        assert old == b"# Severity\nSEV1 is bad.\n"
        assert b"twice" in client.get_skill_file(p, "incident-response", "SKILL.md")
    for request in world.requests:
        assert request.headers["X-API-Key"] == world.write_key and world.write_key not in str(request.url)


async def test_async_skill_calls(world):
    p = world.project_id
    async with AsyncStockadeClient(world.write_key, http_client=world.async_http()) as client:
        await client.publish_skill(p, "incident-response", SKILL_MD, {"scripts/page.sh": "echo paging\n"})
        assert [s.skill_name for s in await client.list_skills(p)] == ["incident-response"]
        files = (await client.get_skill(p, "incident-response")).files
        assert sorted(f.path for f in files) == ["SKILL.md", "scripts/page.sh"]
        assert await client.get_skill_file(p, "incident-response", "scripts/page.sh") == b"echo paging\n"
