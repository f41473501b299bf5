"""Money in reports: cents, rounded commercially (half away from zero), as the warehouse's
macros do (``dbt_like_sql/macros/money.sql``), so Python and DuckDB never differ by a cent.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def cents(amount: Decimal | int | str) -> Decimal:
    """``amount`` rounded to cents, half away from zero (``ROUND_HALF_UP`` in ``decimal``
    rounds ties away from zero, for negative amounts too)."""
    return Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)


def format_money(amount: Decimal | int | str) -> str:
    """``1,234.57``: cents with a thousands separator, rounded as ``cents`` rounds."""
    return f"{cents(amount):,}"
