"""Run by test_agentskills_http_client.py under an interpreter that has agentskills-http (Python >= 3.12).

Loads skills from prompt-api through the real HTTPStaticFileSkillProvider and prints what it saw as JSON.
"""

import asyncio
import base64
import json
import sys
import warnings

from agentskills_core import SkillRegistry
from agentskills_http import HTTPStaticFileSkillProvider


async def main(base_url: str, key: str, project_id: str) -> None:
    warnings.simplefilter("ignore")
    async with HTTPStaticFileSkillProvider(
        base_url,
        headers={"X-API-Key": key},
        params={"project_id": project_id},
        skill_manifest=True,
        resource_manifest=True,
        file_manifest=True,
        allow_private_network=True,
        max_retries=0,
    ) as provider:
        discovered = await provider.discover()
        registry = SkillRegistry()
        await registry.register_all(provider)
        name = discovered[0]
        skill = registry.get_skill(name)
        out = {
            "discovered": discovered,
            "metadata": await skill.get_metadata(),
            "body": await provider.get_body(name),
            "resources": await provider.list_resources(name),
            "reference": (await provider.get_reference(name, "severity.md")).decode(),
            "script": (await provider.get_script(name, "page.sh")).decode(),
            "asset_b64": base64.b64encode(await provider.get_asset(name, "diagram.png")).decode(),
            "files": await provider.list_files(name),
            "nested": (await provider.read_file(name, "docs/deep/notes.txt")).decode(),
        }
        try:
            await provider.get_reference(name, "missing.md")
            out["missing"] = "found?!"
        except Exception as exc:
            out["missing"] = type(exc).__name__
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
