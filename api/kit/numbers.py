"""Floats as decimals, the way people read them."""

import decimal
from decimal import Decimal


def float_decimal(value: float) -> Decimal:
    """The float as it prints (0.1, not its binary expansion), as boto3's users store it.
    ValueError for a float subclass that prints as something else than a number."""
    try:
        return Decimal(repr(value))
    except decimal.DecimalException as e:
        raise ValueError(f"The number {value!r:.60} cannot be stored.") from e
