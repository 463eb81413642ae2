"""One record per known credential format: everything the scanner knows about a format lives in its record."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass

from stockade.guardrails.checks.exfiltration.placement import Placement
from stockade.guardrails.checks.exfiltration.veto import Veto

# True: the structure proves the value (keep it even if it looks made up, as test tokens do); False: the structure
# disproves it (never issued: drop it); None: cannot tell (the made-up-value vetoes decide)
Validator = Callable[[str], bool | None]


class Body(enum.Enum):
    """What the matched value is made of, which says which made-up-value vetoes apply to it."""

    RANDOM = "random"  # generated characters: example words, runs, low entropy and English words veto it
    WORDS = (
        "words"  # holds words by design (a URL, a host name, a key header, a UUID's hex words): no word veto
    )
    STRUCTURED = "structured"  # judged by its structure alone (PEM headers, JWKs, X bearer tokens): no veto


@dataclass(frozen=True)
class KeyFormat:
    """A credential format.

    ``pattern``'s group 1 (or the whole match) is the value. The format is tried only on a text holding one of
    its ``literals`` (none: always tried). ``validator`` checks the value's structure (checksums, decodable
    parts). ``context`` lists the rules that judge the match where it stands (an example line, an id name).
    ``severity`` is the finding's score (below the warn threshold's reach alone for ids and endpoints).
    ``paired_with`` names the format of the id a secret is reported next to (within ``PAIR_WINDOW``): a blob
    that is random alone (an AWS secret access key) is looked for near its id only.
    """

    name: str
    pattern: re.Pattern[str]
    literals: tuple[str, ...] = ()
    validator: Validator | None = None
    context: tuple[Veto[Placement], ...] = ()
    severity: float = 0.95
    body: Body = Body.RANDOM
    paired_with: str | None = None


def fmt(
    name: str,
    pattern: str,
    literals: tuple[str, ...] = (),
    *,
    validator: Validator | None = None,
    context: tuple[Veto[Placement], ...] = (),
    severity: float = 0.95,
    body: Body = Body.RANDOM,
    paired_with: str | None = None,
) -> KeyFormat:
    """A :class:`KeyFormat` from its pattern's source."""
    return KeyFormat(name, re.compile(pattern), literals, validator, context, severity, body, paired_with)
