"""Each exception class from a real prompt-api answer; 4xx answers are never retried."""

import pytest

from stockade.client import (
    AuthenticationError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    StockadeClient,
    StockadeClientError,
    ValidationError,
)

pytestmark = [pytest.mark.postgres, pytest.mark.nats]


@pytest.fixture
def clients(world):
    made = []

    def make(key):
        client = StockadeClient(key, http_client=world.http())
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def _one_request_then_clear(world):
    assert len(world.requests) == 1, [r.url.path for r in world.requests]
    world.requests.clear()


def test_uniform_404_says_it_does_not_mean_missing(world, clients):
    for key in (world.write_key, world.revoked_key, "stk_not_a_real_key"):
        with pytest.raises(NotFoundError) as caught:
            clients(key).get_prompt(world.project_id, "nothing-here")
        assert caught.value.status_code == 404 and caught.value.code == "not_found"
        assert "does not mean the prompt is missing" in str(caught.value)
        assert key not in str(caught.value)
        _one_request_then_clear(world)


def test_401_for_a_revoked_or_unknown_key(world, clients):
    for key in (world.revoked_key, "stk_not_a_real_key"):
        with pytest.raises(AuthenticationError) as caught:
            clients(key).list_prompts(world.project_id)
        assert caught.value.status_code == 401 and caught.value.code == "unauthorized"
        _one_request_then_clear(world)
    with pytest.raises(AuthenticationError):
        clients(world.revoked_key).publish_prompt(world.project_id, "p", "x")
    _one_request_then_clear(world)


def test_403_is_not_retried(world, clients):
    with pytest.raises(PermissionDeniedError) as caught:
        clients(world.read_key).publish_prompt(world.project_id, "p", "x")
    assert caught.value.status_code == 403 and caught.value.code == "forbidden"
    _one_request_then_clear(world)
    with pytest.raises(PermissionDeniedError):  # listing needs project membership (spec 5.1)
        clients(world.carol_key).list_prompts(world.project_id)
    _one_request_then_clear(world)
    with pytest.raises(PermissionDeniedError):
        clients(world.write_key).list_skills(world.foreign_project_id)
    _one_request_then_clear(world)


def test_422_and_413(world, clients):
    client = clients(world.write_key)
    with pytest.raises(ValidationError) as caught:
        client.publish_prompt(world.project_id, "../bad name", "x")
    assert caught.value.status_code == 422 and caught.value.code == "invalid_request"
    with pytest.raises(ValidationError):
        client.publish_skill(world.project_id, "my-skill", "no front matter here")
    with pytest.raises(PayloadTooLargeError) as too_big:
        client.publish_prompt(world.project_id, "big", "x" * 100_000)  # the test server's limit is 64 KiB
    assert too_big.value.status_code == 413 and too_big.value.code == "payload_too_large"
    assert [r.url.path for r in world.requests].count("/prompts/active-prompt-version") == 2
    with pytest.raises(NotFoundError) as absent:
        client.get_prompt(world.project_id, "big")
    assert isinstance(absent.value, StockadeClientError)


def test_unknown_skill_and_file_are_404(world, clients):
    client = clients(world.write_key)
    with pytest.raises(NotFoundError) as caught:
        client.get_skill(world.project_id, "no-such-skill")
    assert "does not mean" not in str(caught.value)  # a plain 404 here: the key was good
    with pytest.raises(NotFoundError):
        client.get_skill_file(world.project_id, "no-such-skill", "references/x.md")
