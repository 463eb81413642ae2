"""Check digits of US health identifiers."""

from __future__ import annotations

import pytest

from stockade.guardrails.checks.pii.phi_checksums import dea_valid, luhn_valid, npi_valid


@pytest.mark.parametrize(("npi", "ok"), [("1234567893", True), ("1234567890", False), ("3234567893", False)])
def test_npi_uses_luhn_over_80840_prefix(npi: str, ok: bool) -> None:
    assert npi_valid(npi) is ok


def test_npi_is_not_plain_luhn() -> None:
    # 1234567893 fails plain Luhn but passes with the 80840 prefix.
    assert not luhn_valid("1234567893") and npi_valid("1234567893")


@pytest.mark.parametrize(("dea", "ok"), [("AB1234563", True), ("AB1234564", False), ("IB1234563", False)])
def test_dea_checksum(dea: str, ok: bool) -> None:
    assert dea_valid(dea) is ok
