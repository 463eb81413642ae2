"""Check digits (pure functions, no Presidio needed): Luhn (card numbers, the NPI) and the DEA number."""

from __future__ import annotations


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def npi_valid(npi: str) -> bool:
    """US National Provider Identifier: 10 digits starting 1 or 2; Luhn over the 80840 prefix + 10 digits."""
    return len(npi) == 10 and npi.isdigit() and npi[0] in "12" and luhn_valid("80840" + npi)


DEA_FIRST_LETTERS = "ABCDEFGHJKLMPRSTUX"


def dea_valid(dea: str) -> bool:
    """DEA registration number: 2 letters + 7 digits; (d1+d3+d5) + 2*(d2+d4+d6) ends in d7."""
    if len(dea) != 9 or dea[0] not in DEA_FIRST_LETTERS or not (dea[1].isalpha() or dea[1] == "9"):
        return False
    digits = dea[2:]
    if not digits.isdigit():
        return False
    d = [int(c) for c in digits]
    return (d[0] + d[2] + d[4] + 2 * (d[1] + d[3] + d[5])) % 10 == d[6]
