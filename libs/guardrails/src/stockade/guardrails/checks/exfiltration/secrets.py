"""Find credentials in text: the known key formats (``formats.FORMATS``), high-entropy values in credential
context, and (with the ``secrets`` extra) the detect-secrets plugins. Returns spans and rule names, never stores
values. Every candidate rejected is rejected by a named veto, counted in :meth:`SecretScanner.report`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from stockade.guardrails.checks.exfiltration.context import (
    ENCODED_DATA_LINE,
    ContextCandidate,
    context_candidates,
)
from stockade.guardrails.checks.exfiltration.formats import FORMATS
from stockade.guardrails.checks.exfiltration.key_format import Body, KeyFormat
from stockade.guardrails.checks.exfiltration.placement import (
    PAIR_WINDOW,
    PLACEMENT_VETOES,
    SPAN_VETOES,
    Placement,
    ScannedText,
)
from stockade.guardrails.checks.exfiltration.plugins import detect_secrets_plugins, scan_plugins
from stockade.guardrails.checks.exfiltration.policy import SecretsPolicy
from stockade.guardrails.checks.exfiltration.rules import CONTEXT_RULE
from stockade.guardrails.checks.exfiltration.value_vetoes import (
    CONTEXT_VETOES,
    FAILS_VALIDATION,
    PLUGIN_VETOES,
    RANDOM_BODY_VETOES,
    WORDS_BODY_VETOES,
    MatchedValue,
)
from stockade.guardrails.checks.exfiltration.veto import Veto, first_veto

_BODY_VETOES: dict[Body, tuple[Veto[MatchedValue], ...]] = {
    Body.RANDOM: RANDOM_BODY_VETOES,
    Body.WORDS: WORDS_BODY_VETOES,
    Body.STRUCTURED: (),
}


@dataclass(frozen=True)
class SecretHit:
    start: int
    end: int
    rule: str
    score: float


@dataclass(frozen=True)
class Rejection:
    """A candidate a veto rejected: where, the rule that found it, and the veto's name."""

    start: int
    end: int
    rule: str
    veto: str


@dataclass
class ScanReport:
    hits: list[SecretHit]
    rejected: list[Rejection] = field(default_factory=list)

    @property
    def veto_counts(self) -> Counter[str]:
        return Counter(r.veto for r in self.rejected)


class SecretScanner:
    """Scan a text for credentials. ``use_detect_secrets`` loads detect-secrets plugins (``secrets`` extra);
    ``policy`` chooses which vetoes apply (:class:`SecretsPolicy`)."""

    def __init__(
        self,
        *,
        entropy_threshold: float = 3.5,
        min_token_length: int = 12,
        use_detect_secrets: bool = True,
        disabled_rules: Iterable[str] = (),
        allow_values: Iterable[str] = (),
        policy: SecretsPolicy | None = None,
    ) -> None:
        self.entropy_threshold = entropy_threshold
        self.min_token_length = min_token_length
        self.policy = policy or SecretsPolicy()
        self._plugins = detect_secrets_plugins() if use_detect_secrets else []
        self._disabled = frozenset(disabled_rules)
        self._allowed = [re.compile(p) for p in allow_values]
        self._context_vetoes = self.policy.applied(CONTEXT_VETOES)
        self._plugin_vetoes = self.policy.applied(PLUGIN_VETOES)
        self._placement_vetoes = {f.name: self.policy.applied((*SPAN_VETOES, *f.context)) for f in FORMATS}

    def scan(self, text: str) -> list[SecretHit]:
        return self.report(text).hits

    def report(self, text: str) -> ScanReport:
        """The hits, and every candidate a veto rejected (``veto_counts`` counts them by veto)."""
        report = ScanReport([])
        hits, candidates = self._candidates(text, report)
        hits += [SecretHit(c.start, c.end, CONTEXT_RULE, 0.8) for c in candidates if c.accepted]
        report.rejected += [Rejection(c.start, c.end, CONTEXT_RULE, c.veto) for c in candidates if c.veto]
        if self._disabled or self._allowed:  # before the dedupe, so a disabled rule hides nothing under it
            hits = [h for h in hits if h.rule not in self._disabled and not self._allowed_value(text, h)]
        report.hits = dedupe(hits)
        return report

    def candidates(self, text: str) -> tuple[list[SecretHit], list[ContextCandidate]]:
        """Hits of the format rules and plugins, and every credential-context candidate (accepted or not)."""
        return self._candidates(text, ScanReport([]))

    def _allowed_value(self, text: str, hit: SecretHit) -> bool:
        value = text[hit.start : hit.end]
        return any(p.fullmatch(value) for p in self._allowed)

    def _candidates(self, text: str, report: ScanReport) -> tuple[list[SecretHit], list[ContextCandidate]]:
        hits = self._scan_formats(ScannedText(text), report)
        if self._plugins:
            source = ScannedText(text)

            def found(rule: str, start: int, end: int) -> None:
                veto = first_veto(SPAN_VETOES, Placement(source, start, end, start))
                if veto is None:
                    hits.append(SecretHit(start, end, rule, 0.9))
                else:
                    report.rejected.append(Rejection(start, end, rule, veto.name))

            def vetoed(rule: str, start: int, end: int, veto: str) -> None:
                report.rejected.append(Rejection(start, end, rule, veto))

            scan_plugins(text, self._plugins, self._plugin_vetoes, found, vetoed)
        candidates = list(
            context_candidates(
                text,
                entropy_threshold=self.entropy_threshold,
                min_length=self.min_token_length,
                vetoes=self._context_vetoes,
            )
        )
        return hits, candidates

    def _scan_formats(self, source: ScannedText, report: ScanReport) -> list[SecretHit]:
        text = source.text
        accepted: dict[str, list[SecretHit]] = {}
        for f in FORMATS:
            if f.paired_with is not None:  # looked for only near the hits of its id's format
                windows = [
                    (max(0, a.start - PAIR_WINDOW), a.end + PAIR_WINDOW)
                    for a in accepted.get(f.paired_with, ())
                ]
            elif f.literals and not any(literal in text for literal in f.literals):
                continue
            else:
                windows = [(0, len(text))]
            for lo, hi in windows:
                for m in f.pattern.finditer(text, lo, hi):
                    g = 1 if m.lastindex else 0
                    hit = SecretHit(m.start(g), m.end(g), f.name, f.severity)
                    veto = self._judge(f, source, m.group(g), hit.start, hit.end, m.start())
                    if veto is None:
                        accepted.setdefault(f.name, []).append(hit)
                    else:
                        report.rejected.append(Rejection(hit.start, hit.end, f.name, veto))
        return [h for hits in accepted.values() for h in hits]

    def _judge(
        self, f: KeyFormat, source: ScannedText, value: str, start: int, end: int, at: int
    ) -> str | None:
        """The name of the veto that rejects a format's match, or None: a finding."""
        verdict = f.validator(value) if f.validator else None
        if FAILS_VALIDATION.test(verdict):
            return FAILS_VALIDATION.name
        placed = first_veto(self._placement_vetoes[f.name], Placement(source, start, end, at))
        if placed is not None:
            return placed.name
        made_up = (
            None if verdict is True else first_veto(_BODY_VETOES[f.body], MatchedValue(value, f.literals))
        )
        return made_up.name if made_up else None


def dedupe(hits: list[SecretHit]) -> list[SecretHit]:
    """Drop hits contained in a higher-or-equal scored hit."""
    hits.sort(key=lambda h: (h.start, -(h.end - h.start), -h.score))
    kept: list[SecretHit] = []
    for h in hits:
        if any(k.start <= h.start and h.end <= k.end and k.score >= h.score for k in kept):
            continue
        kept.append(h)
    return kept


# every veto the scanner may count, by name (the fixture corpus in tests/fixtures/secrets covers each)
VETO_NAMES: frozenset[str] = frozenset(
    [
        *(v.name for v in CONTEXT_VETOES),
        FAILS_VALIDATION.name,
        *(v.name for v in PLUGIN_VETOES),
        *(v.name for v in PLACEMENT_VETOES),
        ENCODED_DATA_LINE,
    ]
)
