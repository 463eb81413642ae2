"""Who hears of which policy version: push and the poll may both read the policy, in any order; a watcher hears
of each newer version once and is never taken back to an older one."""

from datetime import UTC, datetime

from stockade.client import PolicyVersion
from stockade.client.policy_watch import PolicyWatchers


def version(n: int) -> PolicyVersion:
    return PolicyVersion(
        project_id="p",
        policy_name="agent",
        version=n,
        yaml="guardrails: {}\n",
        sha256=f"{n:064x}",
        published_at=datetime.now(UTC),
        published_by="u",
    )


def test_each_newer_version_once_and_never_back():
    heard: list[int] = []
    watchers = PolicyWatchers()
    watchers.add("p", "agent", lambda v: heard.append(v.version))
    watchers.told(version(1))  # what the agent started on
    for n in (1, 3, 2, 3, 4):  # the poll's late read of version 2 arrives after push brought 3
        watchers.deliver(version(n))
    assert heard == [3, 4]


def test_what_is_polled_follows_push():
    watchers = PolicyWatchers()
    watchers.add("p", "agent", lambda v: None)
    watchers.add("p", "other", lambda v: None)
    watchers.pushed("p", "agent")  # push follows this one; "other" was refused
    assert watchers.to_poll(push_active=True) == [("p", "other")]
    assert sorted(watchers.to_poll(push_active=False)) == [("p", "agent"), ("p", "other")]  # disconnected
