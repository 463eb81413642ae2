"""Skills: publish with validation, the agentskills-http read layout, versions, traversal refusal, 401/403."""

import hashlib
import json

import pytest
from sqlalchemy import func, select

from stockade.prompt_api.tables import SkillFile, SkillVersion

PUBLISH = "/skills/active-version"


async def _skill_rows(sessions):
    async with sessions() as s:
        return (
            (await s.execute(select(func.count()).select_from(SkillVersion))).scalar_one(),
            (await s.execute(select(func.count()).select_from(SkillFile))).scalar_one(),
        )


@pytest.fixture
async def published(client, world, sample_skill):
    skill_body, _, _ = sample_skill
    r = await client.post(
        PUBLISH, headers={"X-API-Key": world.write_key}, json=skill_body(world.direct.id, commit_message="v1")
    )
    assert r.status_code == 201, r.text
    return r.json()


async def test_publish_returns_the_version(published, world, sample_skill):
    _, _, PNG = sample_skill
    assert published["version"] == 1 and published["skill_name"] == "incident-response"
    assert published["front_matter"]["metadata"] == {"owner": "sre"}
    paths = [f["path"] for f in published["files"]]
    assert paths == [
        "SKILL.md",
        "assets/diagram.png",
        "docs/deep/notes.txt",
        "references/severity.md",
        "scripts/page.sh",
    ]
    png = next(f for f in published["files"] if f["path"] == "assets/diagram.png")
    assert png["size"] == 256 and png["sha256"] == hashlib.sha256(PNG).hexdigest()


async def test_read_layout(client, world, published, sample_skill):
    _, SKILL_MD, PNG = sample_skill
    h, p = {"X-API-Key": world.read_key}, {"project_id": world.direct.id}
    assert (await client.get("/skills/index.json", headers=h, params=p)).json() == {
        "skills": ["incident-response"]
    }
    listing = (await client.get("/skills", headers=h, params=p)).json()
    assert listing[0]["skill_name"] == "incident-response" and listing[0]["active_version"] == 1
    assert listing[0]["description"].startswith("Handle production")
    md = await client.get("/skills/incident-response/SKILL.md", headers=h, params=p)
    assert md.status_code == 200 and md.text == SKILL_MD
    assert md.headers["content-type"].startswith("text/markdown")
    r304 = await client.get(
        "/skills/incident-response/SKILL.md", headers={**h, "If-None-Match": md.headers["etag"]}, params=p
    )
    assert r304.status_code == 304
    manifest = (await client.get("/skills/incident-response/index.json", headers=h, params=p)).json()
    assert manifest == {
        "references": ["severity.md"],
        "scripts": ["page.sh"],
        "assets": ["diagram.png"],
        "files": [
            "SKILL.md",
            "assets/diagram.png",
            "docs/deep/notes.txt",
            "references/severity.md",
            "scripts/page.sh",
        ],
    }
    png = await client.get("/skills/incident-response/assets/diagram.png", headers=h, params=p)
    assert png.content == PNG and png.headers["content-type"] == "image/png"
    nested = await client.get("/skills/incident-response/docs/deep/notes.txt", headers=h, params=p)
    assert nested.text == "nested file"
    ref = await client.get(
        "/skills/incident-response/references/severity.md", params={**p, "api_key": world.read_key}
    )
    assert ref.status_code == 200 and "SEV1" in ref.text
    detail = (await client.get("/skills/incident-response", headers=h, params=p)).json()
    assert (
        detail["version"] == 1
        and detail["active_version"] == 1
        and detail["front_matter"]["name"] == "incident-response"
    )
    assert [v["version"] for v in detail["history"]] == [1] and detail["history"][0]["commit_message"] == "v1"


async def test_version_parameter_reads_earlier_versions(client, world, published, sample_skill):
    skill_body, SKILL_MD, _ = sample_skill
    md2 = SKILL_MD.replace("step by step", "quickly")
    r = await client.post(
        PUBLISH, headers={"X-API-Key": world.write_key}, json=skill_body(world.direct.id, md=md2, files={})
    )
    assert r.status_code == 201 and r.json()["version"] == 2
    h, p = {"X-API-Key": world.read_key}, {"project_id": world.direct.id}
    assert (await client.get("/skills/incident-response/SKILL.md", headers=h, params=p)).text == md2
    assert (
        await client.get("/skills/incident-response/SKILL.md", headers=h, params={**p, "version": 1})
    ).text == SKILL_MD
    assert (await client.get("/skills/incident-response/index.json", headers=h, params=p)).json()[
        "files"
    ] == ["SKILL.md"]
    old = await client.get("/skills/incident-response/scripts/page.sh", headers=h, params={**p, "version": 1})
    assert old.status_code == 200 and "paging" in old.text
    assert (
        await client.get("/skills/incident-response/scripts/page.sh", headers=h, params=p)
    ).status_code == 404
    detail = (await client.get("/skills/incident-response", headers=h, params={**p, "version": 1})).json()
    assert (
        detail["version"] == 1
        and detail["active_version"] == 2
        and [v["version"] for v in detail["history"]] == [2, 1]
    )
    assert (
        await client.get("/skills/incident-response", headers=h, params={**p, "version": 7})
    ).status_code == 404


async def test_unknown_skill_or_file_is_a_json_404(client, world, published):
    h, p = {"X-API-Key": world.read_key}, {"project_id": world.direct.id}
    for path in (
        "/skills/nope",
        "/skills/nope/SKILL.md",
        "/skills/nope/index.json",
        "/skills/incident-response/references/missing.md",
    ):
        r = await client.get(path, headers=h, params=p)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", path


@pytest.mark.parametrize(
    "raw_path",
    [
        "/skills/..%2F..%2Fetc/passwd",
        "/skills/incident-response/..%2F..%2Fsecret",
        "/skills/incident-response/%2e%2e/x",
        "/skills/incident-response/references/%2e%2e/%2e%2e/x",
        "/skills/incident-response/references%5C..%5Cx",
        "/skills/incident-response/references/a%00b",
        "/skills/incident-response//etc/passwd",
        "/skills/incident-response/references/%252e%252e/x",
        "/skills/Incident-Response/SKILL.md",
    ],
)
async def test_traversal_shaped_paths_are_refused(client, world, published, raw_path):
    r = await client.get(raw_path + f"?project_id={world.direct.id}", headers={"X-API-Key": world.read_key})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_path"


@pytest.mark.parametrize(
    "path",
    [
        "/skills",
        "/skills/index.json",
        "/skills/incident-response",
        "/skills/incident-response/SKILL.md",
        "/skills/incident-response/index.json",
        "/skills/incident-response/scripts/page.sh",
    ],
)
async def test_every_skill_read_needs_a_key_and_project_membership(client, world, published, path):
    p = {"project_id": world.direct.id}
    assert (await client.get(path, params=p)).status_code == 401
    assert (await client.get(path, params=p, headers={"X-API-Key": "stk_nope"})).status_code == 401
    assert (await client.get(path, params=p, headers={"X-API-Key": world.carol_key})).status_code == 403
    assert (
        await client.get(path, params={"project_id": world.foreign.id}, headers={"X-API-Key": world.read_key})
    ).status_code == 403


BAD_SKILLS = [
    ("no front matter", dict(md="# just text\n"), "front matter"),
    ("unclosed", dict(md="---\nname: incident-response\n"), "not closed"),
    ("bad yaml", dict(md="---\nname: [x\n---\nbody\n"), "YAML"),
    ("name mismatch", dict(md=("name: incident-response", "name: other-skill")), "differs"),
    ("upper case name", dict(md=("name: incident-response", "name: Incident")), "name"),
    (
        "double hyphen",
        dict(
            name="incident--response",
            md=("name: incident-response", "name: incident--response"),
        ),
        "name",
    ),
    (
        "leading hyphen",
        dict(name="-incident", md=("name: incident-response", "name: -incident")),
        "name",
    ),
    (
        "name too long",
        dict(name="a" * 65, md=("name: incident-response", "name: " + "a" * 65)),
        "name",
    ),
    (
        "no description",
        dict(md=("description: Handle production incidents step by step.\n", "")),
        "description",
    ),
    (
        "description too long",
        dict(md=("Handle production incidents step by step.", "x" * 1025)),
        "description",
    ),
    ("unknown key", dict(md=("license:", "version: 2\nlicense:")), "unknown front matter"),
    ("traversal path", dict(files={"../evil.sh": "x"}), "invalid file path"),
    ("absolute path", dict(files={"/etc/passwd": "x"}), "invalid file path"),
    ("backslash path", dict(files={"scripts\\\\x.sh": "x"}), "invalid file path"),
    ("nul path", dict(files={"scripts/a\\u0000b": "x"}), "invalid file path"),
    ("reserved SKILL.md", dict(files={"SKILL.md": "x"}), "reserved"),
    ("bad base64", dict(files={"assets/x.bin": {"base64": "!!!"}}), "base64"),
    ("lone surrogate", dict(files={"references/x.md": "\\ud800"}), "UTF-8"),
]


@pytest.mark.parametrize("label, change, fragment", BAD_SKILLS, ids=[b[0] for b in BAD_SKILLS])
async def test_invalid_skills_are_422_and_change_nothing(
    client, world, sessions, label, change, fragment, sample_skill
):
    skill_body, SKILL_MD, _ = sample_skill
    if isinstance(change.get("md"), tuple):  # (old, new): SKILL.md with one replacement
        change = {**change, "md": SKILL_MD.replace(*change["md"])}
    payload = json.dumps(skill_body(world.direct.id, **change))
    payload = payload.replace("\\\\\\\\", "\\\\").replace(
        "\\\\u", "\\u"
    )  # keep raw escapes (NUL, surrogate) in the JSON
    r = await client.post(
        PUBLISH, headers={"X-API-Key": world.write_key, "Content-Type": "application/json"}, content=payload
    )
    assert r.status_code == 422, r.text
    assert fragment in r.json()["error"]["message"]
    assert await _skill_rows(sessions) == (0, 0)


async def test_size_limits_are_422(app_factory, world, sessions, sample_skill):
    skill_body, _, _ = sample_skill
    from stockade.prompt_api.settings import LimitSettings

    small = await app_factory(
        limits=LimitSettings(max_skill_file_bytes=100, max_skill_total_bytes=150, max_skill_files=3)
    )
    h = {"X-API-Key": world.write_key}
    big_file = await small.post(
        PUBLISH, headers=h, json=skill_body(world.direct.id, files={"a.txt": "x" * 101})
    )
    assert big_file.status_code == 422 and "limit" in big_file.json()["error"]["message"]
    total = await small.post(
        PUBLISH, headers=h, json=skill_body(world.direct.id, files={"a.txt": "x" * 80, "b.txt": "y" * 80})
    )
    assert total.status_code == 422
    many = await small.post(
        PUBLISH, headers=h, json=skill_body(world.direct.id, files={f"{i}.txt": "x" for i in range(4)})
    )
    assert many.status_code == 422
    assert await _skill_rows(sessions) == (0, 0)


async def test_skill_publish_refusals(client, world, sessions, sample_skill):
    skill_body, _, _ = sample_skill
    body = skill_body(world.direct.id)
    assert (await client.post(PUBLISH, params={"api_key": world.write_key}, json=body)).status_code == 401
    assert (await client.post(PUBLISH, headers={"X-API-Key": world.read_key}, json=body)).status_code == 403
    assert (await client.post(PUBLISH, headers={"X-API-Key": world.carol_key}, json=body)).status_code == 403
    review = skill_body(world.review.id)
    assert (
        await client.post(PUBLISH, headers={"X-API-Key": world.write_key}, json=review)
    ).status_code == 403
    assert await _skill_rows(sessions) == (0, 0)
