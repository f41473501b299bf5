"""Money in reports: cents, rounded commercially (half away from zero), as the warehouse's
macros do (``dbt_like_sql/macros/money.sql``), so Python and DuckDB never differ by a cent.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

CENT = Decimal("0.01")


def cents(amount: Decimal | int | str) -> Decimal:
    """``amount`` rounded to cents, half away from zero (``ROUND_HALF_UP`` in ``decimal``
    rounds ties away from zero, for negative amounts too)."""
    return Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)


def format_money(amount: Decimal | int | str) -> str:
    """``1,234.57``: cents with a thousands separator, rounded as ``cents`` rounds."""
    return f"{cents(amount):,}"


def allocate(amount: Decimal, weights: list[Decimal]) -> list[Decimal]:
    """``amount`` (whole cents) split in proportion to ``weights``, in whole cents that add
    up to it: each share rounded down, the cents left over to the largest remainders (ties
    to the earlier weight). With weights adding up to 0 the first share takes all."""
    units = int(cents(amount) / CENT)
    if units != cents(amount) / CENT:
        raise ValueError(f"{amount} is not a whole number of cents")
    total = sum(weights, Decimal(0))
    if not weights:
        return []
    if total == 0:
        return [cents(amount)] + [Decimal("0.00")] * (len(weights) - 1)
    exact = [units * Fraction(w) / Fraction(total) for w in weights]
    floors = [math.floor(x) for x in exact]
    left = units - sum(floors)
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return [Decimal(n) * CENT for n in floors]
