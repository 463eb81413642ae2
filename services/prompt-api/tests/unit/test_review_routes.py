"""Manual review is one mechanism registered once per kind: each kind keeps its own paths, operation names,
models and documented errors (the OpenAPI document the console and clients see)."""

from stockade.prompt_api import review_kinds
from stockade.prompt_api.main import create_app
from stockade.prompt_api.settings import OutboxSettings, PromptApiSettings

EXPECTED = {
    ("post", "/prompts/{prompt_name}/proposals"): ("propose_prompt_version", "PromptProposalPublic"),
    ("get", "/prompt-reviews"): ("list_proposals", "PromptProposalPublic"),
    ("get", "/prompt-reviews/{proposal_id}"): ("get_proposal", "PromptProposalPublic"),
    ("post", "/prompt-reviews/{proposal_id}/approve"): ("approve_proposal", None),
    ("post", "/prompt-reviews/{proposal_id}/reject"): ("reject_proposal", "PromptProposalPublic"),
    ("post", "/skills/{skill_name}/proposals"): ("propose_skill_version", "SkillProposalPublic"),
    ("get", "/skill-reviews"): ("list_skill_proposals", "SkillProposalPublic"),
    ("get", "/skill-reviews/{proposal_id}"): ("get_skill_proposal", "SkillProposalPublic"),
    ("post", "/skill-reviews/{proposal_id}/approve"): ("approve_skill_proposal", None),
    ("post", "/skill-reviews/{proposal_id}/reject"): ("reject_skill_proposal", "SkillProposalPublic"),
}


def test_each_kind_has_its_own_review_routes():
    settings = PromptApiSettings(migrate_on_startup=False, outbox=OutboxSettings(enabled=False))
    paths = create_app(settings).openapi()["paths"]
    for (method, path), (name, model) in EXPECTED.items():
        op = paths[path][method]
        assert op["operationId"].startswith(name + "_"), (path, op["operationId"])
        assert op["tags"] == ["reviews"]
        answer = str(op["responses"]["201" if path.endswith("/proposals") else "200"])
        assert model is None or model in answer, (path, answer)
        assert {"401", "403", "404", "422"} <= set(op["responses"])
    # a traversal-shaped skill name is documented as a 400 where the name is read; prompt names are a 422
    assert "400" in paths["/skills/{skill_name}/proposals"]["post"]["responses"]
    assert "400" not in paths["/prompts/{prompt_name}/proposals"]["post"]["responses"]
    prompt_name = paths["/prompts/{prompt_name}/proposals"]["post"]["parameters"][0]
    assert prompt_name["name"] == "prompt_name" and prompt_name["in"] == "path"
    assert "pattern" in prompt_name["schema"]


def test_the_kinds_differ_only_in_what_they_review():
    assert (review_kinds.PROMPTS.noun, review_kinds.SKILLS.noun) == ("prompt", "skill")
    assert review_kinds.PROMPTS.table.__tablename__ == "prompt_proposals"
    assert review_kinds.SKILLS.table.__tablename__ == "skill_proposals"
