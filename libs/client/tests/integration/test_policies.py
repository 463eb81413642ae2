"""Guardrail policies through the client against the real prompt-api: publish, the active read cached with its
ETag, listing, history, rollback; an invalid policy is a ValidationError naming the key path; watch_policy hears
each newly active version by push (policy.published.v1.<project>), once."""

import queue

import pytest

from stockade.client import ClientSettings, PushSettings, StockadeClient, ValidationError
from stockade.client.models import PolicyVersion

V1 = "guardrails:\n  checks:\n    exfiltration:\n      enabled: false\n"
V2 = "guardrails:\n  checks:\n    exfiltration:\n      enabled: true\n"


def test_publish_read_with_etag_list_history_and_rollback(world):
    with StockadeClient(
        world.write_key, ClientSettings(base_url=world.base_url), http_client=world.http()
    ) as c:
        first = c.publish_policy(world.project_id, "agent", V1, "lenient")
        assert first.version == 1 and first.yaml == V1 and first.commit_message == "lenient"
        c.publish_policy(world.project_id, "agent", V2)
        assert c.get_policy(world.project_id, "agent").version == 2
        again = c.get_policy(world.project_id, "agent")  # revalidated: 304, the cached copy
        assert again.version == 2 and world.responses[-1].status_code == 304
        assert world.requests[-1].headers["If-None-Match"] == world.responses[-2].headers["ETag"]
        assert "api_key" not in str(world.requests[-1].url)  # the key travels in the header
        [summary] = c.list_policies(world.project_id)
        assert summary.policy_name == "agent" and summary.active_version == 2
        assert [v.version for v in c.policy_versions(world.project_id, "agent")] == [2, 1]
        assert c.get_policy(world.project_id, "agent", version=1).yaml == V1
        back = c.rollback_policy(world.project_id, "agent", 1)
        assert back.version == 3 and back.yaml == V1
        assert c.get_policy(world.project_id, "agent").version == 3  # the rollback invalidated the copy
        with pytest.raises(ValidationError) as refused:
            c.publish_policy(world.project_id, "agent", "guardrails:\n  checks:\n    nope: 1\n")
        assert refused.value.status_code == 422 and "guardrails.checks.nope" in str(refused.value)


def test_watch_policy_hears_each_activation_once(world, nats_url):
    settings = ClientSettings(
        base_url=world.base_url, push=PushSettings(nats_url=nats_url, project_ids=(world.project_id,))
    )
    heard: queue.Queue[PolicyVersion] = queue.Queue()
    with StockadeClient(world.write_key, settings) as c:
        current = c.publish_policy(world.project_id, "agent", V1)
        assert c.watch_policy(world.project_id, "agent", heard.put, current=current)
        c.publish_policy(world.project_id, "agent", V2)
        pushed = heard.get(timeout=15)  # deadline: the relay and push deliver well within it
        assert pushed.version == 2 and pushed.yaml == V2
        c.rollback_policy(world.project_id, "agent", 1)
        assert heard.get(timeout=15).version == 3
        assert heard.empty()


def test_after_a_nats_reconnect_a_watched_policy_is_read_again(world, nats_server_factory):
    """Events sent while push was disconnected are lost: on reconnect the client re-reads what it follows. Here
    the push server never carries prompt-api's events at all, so only the re-read can bring version 2."""
    private = nats_server_factory()
    settings = ClientSettings(
        base_url=world.base_url, push=PushSettings(nats_url=private.url, project_ids=(world.project_id,))
    )
    heard: queue.Queue[PolicyVersion] = queue.Queue()
    with StockadeClient(world.write_key, settings) as c:
        current = c.publish_policy(world.project_id, "agent", V1)
        assert c.watch_policy(world.project_id, "agent", heard.put, current=current)
        c.publish_policy(world.project_id, "agent", V2)  # its event goes to prompt-api's NATS, not this one
        private.kill()
        private.restart()
        assert heard.get(timeout=20).version == 2  # deadline: nats-py reconnects within a few seconds
