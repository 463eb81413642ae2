"""Authentication and permission resolution against real databases: current rows decide, on every call."""

import pytest
from sqlalchemy import text

from stockade import identity
from stockade.identity import Deployment, Scope
from stockade.identity.access import authenticate, can_list, can_publish, project_access

ONPREM = Deployment.ONPREM


@pytest.fixture
async def world(sessions):
    async with sessions() as s:
        org = await identity.create_organisation(s, "acme")
        other_org = await identity.create_organisation(s, "other")
        alice = await identity.create_user(s, "Alice@Example.com")
        bob = await identity.create_user(s, "bob@example.com")
        direct = await identity.create_project(s, "acme", "direct-proj")
        review = await identity.create_project(s, org.id, "review-proj", "Manual review")
        foreign = await identity.create_project(s, other_org.id, "foreign")
        await identity.add_project_member(s, direct.id, alice.email)
        await identity.add_project_member(s, review.id, "alice@example.com")
        await identity.add_organisation_member(s, "acme", bob.id)
        write = await identity.create_api_key(s, alice.id, scope="write")
        read = await identity.create_api_key(s, alice.id, scope="read")
        legacy = await identity.create_api_key(s, alice.id, legacy=True)
        hosted = await identity.create_api_key(s, alice.id, deployment="hosted")
        bobs = await identity.create_api_key(s, bob.id, scope="write")
        await s.commit()
    return dict(
        org=org,
        alice=alice,
        bob=bob,
        direct=direct,
        review=review,
        foreign=foreign,
        write=write,
        read=read,
        legacy=legacy,
        hosted=hosted,
        bobs=bobs,
    )


async def test_keys_authenticate_with_their_effective_scope(sessions, world):
    async with sessions() as s:
        w = await authenticate(s, world["write"].key, ONPREM)
        assert w is not None and w.owner_id == world["alice"].id and w.scope is Scope.WRITE
        assert (await authenticate(s, world["read"].key, ONPREM)).scope is Scope.READ
        assert (await authenticate(s, world["legacy"].key, ONPREM)).scope is Scope.READ
        assert (await authenticate(s, world["hosted"].key, ONPREM)).scope is Scope.READ
        assert (await authenticate(s, world["write"].key, Deployment.HOSTED)).scope is Scope.READ


async def test_bad_keys_do_not_authenticate(sessions, world):
    from stockade.identity import keys

    forged_body = "stk_" + world["write"].id + "A" * 32
    forged = forged_body + keys.checksum(forged_body)  # right id, right checksum, wrong secret
    real = world["write"].key
    typo = real[:-1] + (
        "0" if real[-1] != "0" else "1"
    )  # the last character always differs from the real key's
    async with sessions() as s:
        for bad in [None, "", "nope", typo, forged, keys.generate_key().plaintext]:
            assert await authenticate(s, bad, ONPREM) is None


async def test_revocation_applies_on_the_next_call(sessions, world):
    async with sessions() as s:
        assert await authenticate(s, world["write"].key, ONPREM) is not None
        revoked = await identity.revoke_api_key(s, world["write"].id)
        await s.commit()
        assert revoked.revoked_at is not None
    async with sessions() as s:
        assert await authenticate(s, world["write"].key, ONPREM) is None
        listed = {k.id: k for k in await identity.list_api_keys(s, "alice@example.com")}
        assert listed[world["write"].id].revoked_at is not None


async def test_only_the_hash_is_stored(sessions, world):
    async with sessions() as s:
        rows = (await s.execute(text("SELECT * FROM api_keys"))).all()
    dump = repr(rows)
    for name in ("write", "read", "legacy", "hosted", "bobs"):
        plaintext = world[name].key
        assert plaintext not in dump
        assert plaintext[16:48] not in dump  # not even the secret part
    from stockade.identity.keys import hash_key

    assert hash_key(world["write"].key) in dump


async def test_listing_needs_project_membership_reading_needs_organisation(sessions, world):
    async with sessions() as s:
        bob_direct = await project_access(s, world["bob"].id, world["direct"].id)
        assert bob_direct.organisation_member and not bob_direct.project_member
        assert not can_list(bob_direct).allowed
        alice_direct = await project_access(s, world["alice"].id, world["direct"].id)
        assert can_list(alice_direct).allowed
        foreign = await project_access(s, world["alice"].id, world["foreign"].id)
        assert foreign.exists and not foreign.organisation_member
        missing = await project_access(s, world["alice"].id, "nope")
        assert not missing.exists and not can_list(missing).allowed


async def test_publish_matrix(sessions, world):
    async with sessions() as s:
        w = await authenticate(s, world["write"].key, ONPREM)
        r = await authenticate(s, world["read"].key, ONPREM)
        direct = await project_access(s, world["alice"].id, world["direct"].id)
        review = await project_access(s, world["alice"].id, world["review"].id)
        assert can_publish(w, direct).allowed
        assert not can_publish(r, direct).allowed
        assert not can_publish(w, review).allowed  # Manual review without approver tag
        await identity.grant_tag(s, world["review"].id, world["alice"].id, "approver")
        review = await project_access(s, world["alice"].id, world["review"].id)
        assert can_publish(w, review).allowed
        await identity.revoke_tag(s, "review-proj", "alice@example.com")
        await s.commit()
        review = await project_access(s, world["alice"].id, world["review"].id)
        assert not can_publish(w, review).allowed
        bob = await authenticate(s, world["bobs"].key, ONPREM)
        assert not can_publish(bob, await project_access(s, world["bob"].id, world["direct"].id)).allowed


async def test_removal_from_project_or_organisation_applies_at_once(sessions, world):
    async with sessions() as s:
        w = await authenticate(s, world["write"].key, ONPREM)
        assert can_publish(w, await project_access(s, w.owner_id, world["direct"].id)).allowed
        assert await identity.remove_project_member(s, world["direct"].id, world["alice"].id)
        assert not can_publish(w, await project_access(s, w.owner_id, world["direct"].id)).allowed
        await identity.add_project_member(s, world["direct"].id, world["alice"].id)
        assert can_publish(w, await project_access(s, w.owner_id, world["direct"].id)).allowed
        assert await identity.remove_organisation_member(s, "acme", world["alice"].id)
        await s.commit()
        access = await project_access(s, w.owner_id, world["direct"].id)
        assert not access.organisation_member and not access.project_member


async def test_directory_errors(sessions, world):
    async with sessions() as s:
        with pytest.raises(identity.ConflictError):
            await identity.create_organisation(s, "acme")
        with pytest.raises(identity.ConflictError):
            await identity.create_user(s, "ALICE@example.com")
        with pytest.raises(identity.NotFoundError):
            await identity.create_project(s, "no-such-org", "x")
        with pytest.raises(identity.InvalidInputError):
            await identity.create_project(s, "acme", "x", flow="yolo")
        with pytest.raises(identity.InvalidInputError):
            await identity.create_api_key(s, world["alice"].id, scope="admin")
        with pytest.raises(identity.NotFoundError):
            await identity.revoke_api_key(s, "000000000000")
        project = await identity.set_project_flow(s, "direct-proj", "manual-review")
        await s.commit()
        assert project.flow == "manual-review"
