import inspect
import uuid
from datetime import datetime, timedelta, timezone

import pytest

import stockade.contracts as contracts
from stockade.contracts import subjects
from stockade.contracts.envelope import EventEnvelope, PromptPublished


def all_subject_constants() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(subjects).items()
        if name.isupper()
        and isinstance(value, str)
        and "." in value
        and "*" not in value
        and not name.endswith("_PREFIX")
    }


def test_every_subject_is_unique():
    values = list(all_subject_constants().values())
    assert len(values) == len(set(values)), "two constants name the same subject"


@pytest.mark.parametrize("subject", subjects.EVENTS)
def test_events_are_past_tense_and_versioned(subject):
    assert subjects.EVENT_PATTERN.fullmatch(subject), subject
    assert ".cmd." not in subject
    fact = subject.split(".")[-2]
    assert fact.endswith("ed") or fact == "events", f"{subject}: events are named in the past tense"


@pytest.mark.parametrize("subject", subjects.COMMANDS)
def test_commands_carry_cmd_and_version(subject):
    assert subjects.COMMAND_PATTERN.fullmatch(subject), subject


def test_every_constant_is_listed_as_event_or_command():
    listed = set(subjects.EVENTS) | set(subjects.COMMANDS)
    for name, value in all_subject_constants().items():
        if name.startswith("KV_"):
            continue
        assert value in listed, f"{name}={value} is neither in EVENTS nor COMMANDS"


def test_every_event_has_exactly_one_stream():
    stored_as = {  # one subject per project
        subjects.PROMPT_PUBLISHED: subjects.PROMPT_PUBLISHED_WILDCARD,
        subjects.POLICY_PUBLISHED: subjects.POLICY_PUBLISHED_WILDCARD,
    }
    for event in subjects.EVENTS:
        owners = [s for s, subs in subjects.STREAMS.items() if stored_as.get(event, event) in subs]
        assert len(owners) == 1, f"{event} is stored by {owners}"
        assert subjects.stream_for(event) == owners[0]
    assert subjects.stream_for(subjects.prompt_published("p1")) == "PROMPTS"


def test_prompt_events_carry_their_project_and_nothing_else():
    assert subjects.prompt_published("0f3a_b-9") == "prompt.published.v1.0f3a_b-9"
    for bad in ["a.b", "*", ">", "", "a b", "x" * 65]:
        with pytest.raises(ValueError):
            subjects.prompt_published(bad)


def test_policy_events_carry_their_project_and_are_stored_with_prompts():
    assert subjects.policy_published("0f3a_b-9") == "policy.published.v1.0f3a_b-9"
    assert subjects.stream_for(subjects.policy_published("p1")) == "PROMPTS"
    assert subjects.stream_for(subjects.POLICY_PUBLISHED) == "PROMPTS"
    for bad in ["a.b", "*", ">", "", "a b", "x" * 65]:
        with pytest.raises(ValueError):
            subjects.policy_published(bad)


def test_agent_subjects_reject_wildcards_and_dots():
    assert subjects.trust_submit("billing-agent") == "trust.submit.billing-agent"
    assert subjects.agent_inbox("billing-agent") == "agent.billing-agent.inbox"
    assert subjects.receiver_of_submit("trust.submit.a_1") == "a_1"
    for bad in ["a.b", "*", ">", "", "a b", "x" * 65]:
        with pytest.raises(ValueError):
            subjects.agent_inbox(bad)
        with pytest.raises(ValueError):
            subjects.trust_submit(bad)
    with pytest.raises(ValueError):
        subjects.receiver_of_submit("agent.x.inbox")


def test_envelope_defaults_and_dedupe_header():
    event = PromptPublished(project_id="p", prompt_name="n", version=3, sha256="ab", published_by="u")
    assert isinstance(event.event_id, uuid.UUID)
    assert event.occurred_at.tzinfo is not None and event.occurred_at.utcoffset() == timedelta(0)
    assert event.headers()["Nats-Msg-Id"] == str(event.event_id)
    assert event.subject == subjects.PROMPT_PUBLISHED


def test_envelope_normalises_to_utc_and_rejects_naive_times():
    tz = timezone(timedelta(hours=5))
    event = EventEnvelope(occurred_at=datetime(2026, 1, 1, 12, tzinfo=tz))
    assert event.occurred_at.hour == 7 and event.occurred_at.utcoffset() == timedelta(0)
    with pytest.raises(ValueError):
        EventEnvelope(occurred_at=datetime(2026, 1, 1, 12))


def test_consumers_ignore_unknown_fields():
    raw = PromptPublished(
        project_id="p", prompt_name="n", version=1, sha256="x", published_by="u"
    ).model_dump()
    raw["added_in_a_later_release"] = {"anything": 1}
    parsed = PromptPublished.model_validate(raw)
    assert parsed.version == 1


def test_public_api_matches_all():
    public = {
        name
        for name, obj in vars(contracts).items()
        if not name.startswith("_") and not inspect.ismodule(obj)
    }
    public.add("subjects")
    assert set(contracts.__all__) == public
