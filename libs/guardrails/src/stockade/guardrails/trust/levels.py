"""Standing trust levels of agents (spec 3): untrusted < restricted < trusted < privileged."""

from __future__ import annotations

from enum import StrEnum


class TrustLevel(StrEnum):
    """An agent's standing trust level. Compare with :meth:`at_least`, never with ``<`` (that compares text)."""

    UNTRUSTED = "untrusted"
    RESTRICTED = "restricted"
    TRUSTED = "trusted"
    PRIVILEGED = "privileged"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def at_least(self, floor: TrustLevel) -> bool:
        """True when this level is ``floor`` or higher."""
        return self.rank >= floor.rank


_RANK = {
    TrustLevel.UNTRUSTED: 0,
    TrustLevel.RESTRICTED: 1,
    TrustLevel.TRUSTED: 2,
    TrustLevel.PRIVILEGED: 3,
}
