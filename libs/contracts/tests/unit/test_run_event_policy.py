"""A run page's policy column: the version an event names, linked to the console's policy page only when the
stored name and version could be prompt-api's (an agent sends them)."""

from datetime import UTC, datetime

import pytest

from stockade.contracts.run_records import RunEvent


def event(name: str | None, version: str | None) -> RunEvent:
    return RunEvent(
        event_id="e1",
        kind="check",
        name="pii",
        occurred_at=datetime.now(UTC),
        session_id=None,
        action="block",
        payload={},
        policy_name=name,
        policy_version=version,
    )


@pytest.mark.parametrize(
    ("name", "version", "shown", "path"),
    [
        ("support-bot", "3", "support-bot v3", "support-bot?from=2&to=3"),
        ("support-bot", "1", "support-bot v1", "support-bot?from=1&to=1"),
        ("support-bot", "x&admin=1", "support-bot vx&admin=1", "support-bot"),  # shown, never in the URL
        ("../../api-keys", "1", "../../api-keys v1", None),  # not a policy name: text, no link
        ("a/b", "2", "a/b v2", None),
        (None, None, None, None),  # a local configuration's event, or one stored before the fields
    ],
)
def test_policy_shown_and_linked_only_when_it_can_be_a_policy(name, version, shown, path):
    assert (event(name, version).policy, event(name, version).policy_path) == (shown, path)
