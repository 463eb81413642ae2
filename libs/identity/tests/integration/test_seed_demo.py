from stockade.identity import Deployment, Scope
from stockade.identity.access import authenticate, can_publish, project_access
from stockade.identity.seed import seed_demo


async def test_seed_once_with_a_working_write_key(sessions):
    seed = await seed_demo(sessions)
    assert seed is not None
    assert seed.api_key_plaintext.startswith("stk_")
    async with sessions() as s:
        principal = await authenticate(s, seed.api_key_plaintext, Deployment.ONPREM)
        assert principal is not None and principal.scope is Scope.WRITE
        assert principal.owner_id == seed.user.id
        direct = await project_access(s, principal.owner_id, seed.project_id)
        assert direct.flow.value == "direct" and can_publish(principal, direct).allowed
        review = await project_access(s, principal.owner_id, seed.review_project_id)
        assert review.flow.value == "manual-review" and review.approver
    assert await seed_demo(sessions) is None
