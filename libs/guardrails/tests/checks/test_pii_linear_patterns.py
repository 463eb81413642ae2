"""The PII check's patterns scan in linear time: user input is untrusted, and a pattern that backtracks over a
long repetitive run would hold the check (and a core) for minutes. Presidio's URL recognizer is replaced by
one that reads host names label by label; it finds Presidio's URLs on real text, but not paths, code or file
names."""

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
    "a..b.com, my-site.org/about",
    "not hosts: 192.168.1.1 file.txt e.g.",
    "a.b.c.d.e.f.g.h.i.j.k.l.com is a long host",
]
# Presidio finds a URL in each of these; stockade's recognizer does not (see url.py): the top-level domain
# must end the host, a host does not start inside a path, an identifier or an e-mail address, and a bare
# file name is not a host.
NOT_URLS = [
    'File "app/main.py", line 12',
    "src/billing/tax/eu.py and docs/vat-rates.md",
    "Connected to postgres at db.internal:5432/orders",
    "self.restkey = restkey; cache.insert(key.clone(), value)",
    "bucket = aws_s3_bucket.reports.id",
    "x.comx, shipping.country_code, John.Smith",
    "run main.py, build.sh or lib.rs; load model.pt",
    "write to a.b@example.org",
]


def _found(patterns: list[tuple[str, str]], text: str) -> list[tuple[int, int]]:
    """Spans any of the patterns finds, without those inside another (what the recognizer reports)."""
    import regex

    flags = regex.IGNORECASE | regex.MULTILINE | regex.DOTALL
    spans = {m.span() for _, rx in patterns for m in regex.compile(rx, flags).finditer(text)}
    return sorted(s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in spans))


def _presidio() -> list[tuple[str, str]]:
    from presidio_analyzer.predefined_recognizers import UrlRecognizer

    return [(p.name, p.regex) for p in UrlRecognizer().patterns]


def _ours() -> list[tuple[str, str]]:
    from stockade.guardrails.checks.pii.url import bounded_url_patterns

    return [(name, rx) for name, rx, _ in bounded_url_patterns()]


@pytest.mark.parametrize("text", SAMPLES)
def test_bounded_url_patterns_find_presidios_urls_on_real_text(text: str) -> None:
    assert _found(_ours(), text) == _found(_presidio(), text)


@pytest.mark.parametrize("text", NOT_URLS)
def test_paths_code_and_file_names_are_not_urls(text: str) -> None:
    from stockade.guardrails.checks.pii.url import file_name

    assert _found(_presidio(), text)  # Presidio's patterns take something here
    assert [s for s in _found(_ours(), text) if not file_name(text[s[0] : s[1]])] == []


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
