"""Presidio's e-mail and IP recognizers with two corrections.

E-mail: Presidio keeps a match only when tldextract finds a public suffix, so ``jane@corp.test``,
``ops@example.invalid`` or ``admin@mail.internal`` were not e-mail addresses (spaCy then often called them a
PERSON). Addresses on the reserved and private-use names (RFC 2606, 6761, 6762 and the names RFC 6762 lists
for private networks) are addresses of real mailboxes too, or look exactly like them: a reply is no place to
guess that one is made up, so they are masked like any other.

IP: an address that cannot reach the public internet identifies no one outside its own network: loopback,
unspecified, RFC 1918 and unique-local, link-local, multicast and reserved (netmasks such as 255.255.255.0)
addresses are not findings. The documentation ranges (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24,
2001:db8::/32) are public-looking addresses and stay findings, for the same reason as the e-mail names above.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Any

from stockade.guardrails.extras import require

FEATURE = "PII/PHI detection"
RESERVED_MAIL_NAMES = frozenset(
    [
        "test",
        "example",
        "invalid",
        "localhost",
        "local",
        "internal",
        "intranet",
        "private",
        "corp",
        "home",
        "lan",
        "arpa",
    ]
)
_PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)


def email_recognizer(language: str = "en") -> Any:
    """A drop-in for Presidio's ``EmailRecognizer`` that also accepts reserved and private-use domain names."""
    return _classes()[0](supported_language=language)


def ip_recognizer(language: str = "en") -> Any:
    """A drop-in for Presidio's ``IpRecognizer`` that drops addresses which cannot identify anyone."""
    return _classes()[1](supported_language=language)


def non_identifying_ip(value: str) -> bool:
    """Whether ``value`` (an address, optionally with a prefix length) is loopback, unspecified, private,
    link-local, multicast or reserved. Invalid text gives False (Presidio's own check rejects it)."""
    try:
        ip = ipaddress.ip_interface(value).ip
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_loopback
        or ip.is_unspecified
        or ip.is_link_local
        or ip.is_multicast
        or (ip.is_reserved and ip.version == 4)
        or any(ip in net for net in _PRIVATE_NETWORKS)
    )


@lru_cache(maxsize=1)
def _classes() -> tuple[Any, Any]:
    predefined = require("presidio_analyzer.predefined_recognizers", extra="pii", feature=FEATURE)
    base_email: Any = predefined.EmailRecognizer
    base_ip: Any = predefined.IpRecognizer

    class ReservedNameEmailRecognizer(base_email):  # type: ignore[misc]
        def validate_result(self, pattern_text: str) -> bool:
            last_label = pattern_text.rsplit(".", 1)[-1].casefold()
            return last_label in RESERVED_MAIL_NAMES or bool(super().validate_result(pattern_text))

    class IdentifyingIpRecognizer(base_ip):  # type: ignore[misc]
        def invalidate_result(self, pattern_text: str) -> bool:
            return bool(super().invalidate_result(pattern_text)) or non_identifying_ip(pattern_text)

    return ReservedNameEmailRecognizer, IdentifyingIpRecognizer
