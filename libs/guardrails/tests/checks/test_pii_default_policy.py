"""The PII check's default policy: what identifies a person or an account is masked (labelled medical and
member numbers whole, e-mail addresses on any domain, phone numbers in any range), places, links and dates
only when configured; no finding crosses a line break; a mask says what it masked."""

from __future__ import annotations

from pathlib import Path

import pytest

from stockade.guardrails import Action, GuardrailSystem

pytestmark = pytest.mark.ml

pytest.importorskip("presidio_analyzer", reason="needs the 'pii' extra")

ONLY_PII = {"classification": {"enabled": False}, "exfiltration": {"enabled": False}}
CORPUS = Path(__file__).resolve().parents[4] / "bench" / "data" / "ordinary_outputs" / "tune"


def system(**pii: object) -> GuardrailSystem:
    return GuardrailSystem({"guardrails": {"checks": {**ONLY_PII, "pii": pii}}})


@pytest.fixture(scope="module")
def default() -> GuardrailSystem:
    return system()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("MRN: 123-45-678 was seen.", "MRN: <MEDICAL_RECORD_NUMBER> was seen."),
        ("Chart for MRN 00-1234567 today", "Chart for MRN <MEDICAL_RECORD_NUMBER> today"),
        ("medical record number: 44.556.677", "medical record number: <MEDICAL_RECORD_NUMBER>"),
        ("Member ID: XKW847261953 on file", "Member ID: <HEALTH_PLAN_ID> on file"),
        ("member ID XYZ-987654321.", "member ID <HEALTH_PLAN_ID>."),
        ("Member # 12345678 and", "Member # <HEALTH_PLAN_ID> and"),
        ("subscriber ID W123 456 789 today", "subscriber ID <HEALTH_PLAN_ID> today"),
    ],
)
async def test_labelled_medical_and_member_numbers_are_masked_whole(
    default: GuardrailSystem, text: str, expected: str
) -> None:
    assert (await default.check_output(text)).masked_text == expected


async def test_a_label_without_a_number_is_not_a_finding(default: GuardrailSystem) -> None:
    verdict = await default.check_output("The member ID for the claim is pending; MRN unknown.")
    assert verdict.action is Action.ALLOW


@pytest.mark.parametrize(
    "domain", ["example.com", "corp.test", "example.invalid", "mail.internal", "gmail.com"]
)
async def test_e_mail_addresses_on_reserved_domains_are_masked_in_output(
    default: GuardrailSystem, domain: str
) -> None:
    verdict = await default.check_output(f"Write to jane.doe@{domain} today.")
    assert verdict.masked_text == "Write to <EMAIL_ADDRESS> today."


@pytest.mark.parametrize("number", ["212-555-0187", "(201) 555-0123", "415-555-0100", "212-867-5309"])
async def test_phone_numbers_in_the_fictional_range_are_masked_like_any_other(
    default: GuardrailSystem, number: str
) -> None:
    verdict = await default.check_output(f"My phone number is {number}.")
    assert verdict.masked_text == "My phone number is <PHONE_NUMBER>."


async def test_addresses_that_cannot_identify_anyone_are_not_ip_findings(default: GuardrailSystem) -> None:
    text = "Bind 0.0.0.0, proxy to 127.0.0.1 and 10.0.3.17, netmask 255.255.255.0; client 8.8.8.8, doc 203.0.113.5"
    verdict = await default.check_output(text)
    assert verdict.masked_text == text.replace("8.8.8.8", "<IP_ADDRESS>").replace(
        "203.0.113.5", "<IP_ADDRESS>"
    )


async def test_places_links_and_dates_are_masked_only_when_configured(default: GuardrailSystem) -> None:
    text = "Ship from Rotterdam to Germany on 12 March, see https://example.org/a."
    assert (await default.check_output(text)).action is Action.ALLOW
    configured = system(entities=["LOCATION", "URL", "DATE_TIME"])
    masked = (await configured.check_output(text)).masked_text or ""
    assert "Rotterdam" not in masked and "Germany" not in masked and "example.org" not in masked


async def test_a_single_word_name_needs_a_cue_unless_configured(default: GuardrailSystem) -> None:
    assert (await default.check_output("Hi Sandra, the report is ready.")).masked_text == (
        "Hi <PERSON>, the report is ready."
    )
    text = "Kevin had given Alma the report."  # two lone first names, no cue
    assert (await default.check_output(text)).action is Action.ALLOW
    assert (await system(single_word_names="always").check_output(text)).masked_text == (
        "<PERSON> had given <PERSON> the report."
    )
    assert (await default.check_output("Ask Sandra Olsen about it.")).masked_text == "Ask <PERSON> about it."


async def test_a_persons_street_address_stays_masked(default: GuardrailSystem) -> None:
    verdict = await default.check_output("Her address is 42 Baker Street, and she is home.")
    assert [f.type for f in verdict.findings] == ["STREET_ADDRESS"]


async def test_a_file_path_is_not_a_url_even_when_urls_are_configured() -> None:
    text = 'File "app/main.py", line 12 in app/routes/orders.py; docs at https://example.org/guide'
    verdict = await system(entities=["URL"]).check_output(text)
    assert verdict.masked_text == 'File "app/main.py", line 12 in app/routes/orders.py; docs at <URL>'


MULTI_LINE = [
    "commit 3e8d0c9\nDate:   Fri Mar 8 17:22:48 2024 -0500\n\n    Bump pydantic to 2.6.3\n",
    "Send it to\n5100 Quadra 104\n Suite 845\n Evionnaz\n Switzerland 05377\n\nThanks,\nJohn\nSmith",
    "| Country | Capital |\n|---|---|\n| Germany | Berlin |\n| France\n| Paris |",
    "Dr. Maria\nGarcia called from\n+49 30\n1234567 about MRN:\n00482913",
]


@pytest.mark.parametrize("text", MULTI_LINE)
async def test_no_finding_crosses_a_line_break(text: str) -> None:
    everything = ["PERSON", "LOCATION", "STREET_ADDRESS", "DATE_TIME", "NRP", "PHONE_NUMBER", "URL"]
    verdict = await system(entities=everything, default_threshold=0.2).check_output(text)
    assert verdict.findings
    for f in verdict.findings:
        assert "\n" not in text[f.start : f.end], (f.type, text[f.start : f.end])


async def test_a_mask_says_what_it_masked_by_type_and_count(default: GuardrailSystem) -> None:
    verdict = await default.check_output("Contact John Smith at john@example.com or jsmith@corp.test.")
    assert verdict.passed and verdict.action is Action.MASK
    assert verdict.error == "output masked: pii found EMAIL_ADDRESS (2), PERSON (1)"
    assert "john" not in verdict.error.lower() and "corp.test" not in verdict.error
    assert (await default.check_input("I am John Smith")).error == "input masked: pii found PERSON (1)"


@pytest.mark.parametrize(
    "name",
    [
        "t01_traceback_fastapi.txt",
        "t02_warehouse_rotterdam.txt",
        "t03_git_log_tz.txt",
        "t04_revenue_countries.md.txt",
        "t05_weather_cities.txt",
        "t07_history_rome.txt",
        "t08_nginx_conf.txt",
        "t14_shell_find.txt",
        "t26_syslog.txt",
        "t39_ansible.txt",
    ],
)
async def test_ordinary_agent_outputs_come_back_unchanged(name: str) -> None:
    # bench/data/ordinary_outputs/tune: the part of the corpus the default policy was tuned on
    text = (CORPUS / name).read_text(encoding="utf-8")
    verdict = await GuardrailSystem(
        {"guardrails": {"checks": {"classification": {"enabled": False}}}}
    ).check_output(text)
    assert verdict.action is Action.ALLOW, [(f.check, f.type) for f in verdict.findings]
