"""The PII check's patterns scan in linear time: user input is untrusted, and a pattern that backtracks over a
long repetitive run would hold the check (and a core) for minutes. Presidio's URL recognizer is replaced by
one that reads host names label by label; it must match what Presidio's matches on real text."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.ml

pytest.importorskip("presidio_analyzer", reason="needs the 'pii' extra")

from stockade.guardrails import GuardrailSystem  # noqa: E402

SAMPLES = [
    "visit www.example.com/path?q=1 now",
    "go to foo.bar.co.uk. today",
    "mail.google.com and docs.python.org/3/library/re.html",
    "see http://sub.domain.io/x and https://a-b.example.org/",
    "quoted 'https://acme.dev/a' and \"example.net\"",
    "x.comx, a..b.com, my-site.org/about",
    "not hosts: 192.168.1.1 file.txt e.g. John.Smith",
    "a.b.c.d.e.f.g.h.i.j.k.l.com is a long host",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_bounded_url_patterns_match_presidios_on_real_text(text: str) -> None:
    import regex
    from presidio_analyzer.predefined_recognizers import UrlRecognizer

    from stockade.guardrails.checks.pii.url import bounded_url_patterns

    flags = regex.IGNORECASE | regex.MULTILINE | regex.DOTALL
    ours = {name: regex.compile(rx, flags) for name, rx, _ in bounded_url_patterns()}
    for p in UrlRecognizer().patterns:
        theirs = [m.span() for m in regex.compile(p.regex, flags).finditer(text)]
        assert [m.span() for m in ours[p.name].finditer(text)] == theirs, p.name


@pytest.fixture(scope="module")
def pii_only() -> GuardrailSystem:
    checks = {
        "classification": {"enabled": False},
        "exfiltration": {"enabled": False},
        "pii": {"timeout_s": 120},
    }
    return GuardrailSystem({"guardrails": {"checks": checks}})


@pytest.mark.timeout(60)  # a hang guard, not a speed figure: each text takes a second or two
@pytest.mark.parametrize(
    "text", ["a." * 50_000, "1-" * 50_000, "a-" * 50_000], ids=["dotted", "dashed-digits", "dashed-letters"]
)
def test_long_repetitive_input_is_checked_in_one_pass(pii_only: GuardrailSystem, text: str) -> None:
    # 100 kB of "a.a.a..." held Presidio's URL pattern for about 80 s; "1-1-1-..." the street-suffix pattern
    # for minutes (quadratic)
    verdict = pii_only.check_input_sync(text)
    assert verdict.passed and not verdict.findings
