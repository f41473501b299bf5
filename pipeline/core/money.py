"""Money in reports: euros rounded to the cent commercially (half away from zero), as the
warehouse's macro ``round_cent`` does (``dbt_like_sql/macros/money.sql``), so Python and
DuckDB never differ by a cent.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def round_cent(amount: Decimal | int | str) -> Decimal:
    """``amount`` (euros) rounded to the cent, half away from zero (``ROUND_HALF_UP`` in ``decimal``
    rounds ties away from zero, for negative amounts too)."""
    return Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)


def format_money(amount: Decimal | int | str) -> str:
    """``1,234.57``: euros to the cent with a thousands separator, rounded as ``round_cent``."""
    return f"{round_cent(amount):,}"
