"""Prices per million tokens: exact decimals, stored as integer micro-units (USD x 10^6), never binary floats."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

MAX_PRICE = Decimal(1_000_000)
PLACES = 6
_MICRO = Decimal(10) ** PLACES


def parse_price(value: Any) -> Decimal | None:
    """A JSON number or decimal string as an exact Decimal; ValueError with a readable reason otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise ValueError('must be a number (or a decimal string such as "0.15")')
    text = str(value).strip() if not isinstance(value, float) else repr(value)
    if "_" in text or len(text) > 64:
        raise ValueError(f"{value!r} is not a decimal number")
    try:
        price = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a decimal number") from None
    if not price.is_finite():
        raise ValueError("must be a finite number")
    if price < 0 or text.startswith("-"):
        raise ValueError("must not be negative")
    if price > MAX_PRICE:
        raise ValueError(f"must be at most {MAX_PRICE}")
    exponent = price.as_tuple().exponent
    if (
        isinstance(exponent, int)
        and exponent < -PLACES
        and price != price.quantize(Decimal(1).scaleb(-PLACES))
    ):
        raise ValueError(f"at most {PLACES} decimal places")
    return price


def to_micros(price: Decimal | None) -> int | None:
    return None if price is None else int(price * _MICRO)


def from_micros(micros: int | None) -> Decimal | None:
    if micros is None:
        return None
    return (Decimal(micros) / _MICRO).normalize() if micros else Decimal(0)


def price_json(price: Decimal | None) -> float | int | None:
    """A JSON number whose text is the exact decimal (values have at most 13 significant digits)."""
    if price is None:
        return None
    if price == price.to_integral_value():
        return int(price)
    return float(price)
