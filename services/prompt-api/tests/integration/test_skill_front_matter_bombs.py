"""A SKILL.md whose front matter expands (YAML aliases: "billion laughs") or nests without bound is refused with
a 422 that names the problem, before anything expands it, and nothing is written."""

import pytest
from sqlalchemy import func, select

from stockade.prompt_api.tables import SkillVersion

PUBLISH = "/skills/active-version"


def _bomb() -> str:
    """396 bytes of YAML; 9**9 = 387,420,489 strings (gigabytes of JSON) once the aliases are expanded."""
    lines = ["name: bomb", "description: Harmless.", "metadata:", "  a: &a [" + ",".join(['"lol"'] * 9) + "]"]
    for label, previous in zip("bcdefghi", "abcdefgh", strict=True):
        lines.append(f"  {label}: &{label} [" + ",".join([f"*{previous}"] * 9) + "]")
    return "---\n" + "\n".join(lines) + "\n---\n# Bomb\n"


@pytest.mark.timeout(60)
async def test_a_billion_laughs_skill_is_refused_quickly(client, world, sessions):
    for md, problem in (
        (_bomb(), "YAML alias (*a, line 5)"),
        (
            "---\nname: bomb\ndescription: d\nmetadata: " + "[" * 5_000 + "]" * 5_000 + "\n---\n",
            "nested deeper",
        ),
    ):
        r = await client.post(
            PUBLISH,
            headers={"X-API-Key": world.write_key},
            json={"project_id": world.direct.id, "skill_name": "bomb", "skill_md": md},
        )
        assert r.status_code == 422, r.text[:300]
        assert r.json()["error"]["code"] == "invalid_request" and problem in r.json()["error"]["message"]
    async with sessions() as s:
        assert (await s.execute(select(func.count()).select_from(SkillVersion))).scalar_one() == 0
