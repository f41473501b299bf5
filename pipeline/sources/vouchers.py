"""The voucher ledger (spec section 4.5): a service of its own, at ``[source]
voucher_url``, read with the tenant's key (``voucher_api_key_env``, else the first
location's). Optional: a load without it configured loads the rest and says so, and
``pos-etl load --no-vouchers`` leaves it out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.sources.base import Source

if TYPE_CHECKING:
    from pipeline.core.settings import Settings


def _key_variable(settings: Settings) -> str:
    return settings.source.voucher_api_key_env or settings.locations[0].api_key_env


SOURCE = Source(
    name="vouchers", title="the voucher ledger", rank=1,
    address=lambda settings: settings.source.voucher_url, setting="source.voucher_url",
    per_location=False, tenant_key_variable=_key_variable, optional=True)
