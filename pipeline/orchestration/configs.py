"""Which settings a command runs with: a config file's, or the built-in sandbox's.

Dagster-free (the CLI reads its settings before it imports what a command needs).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

from pipeline.core.accounting_settings import AccountingSettings, AccountsSettings, PassThrough
from pipeline.core.bank_settings import Acquirer, BankAccount, BankSettings
from pipeline.core.settings import (
    CONFIG_ENV,
    LocationSettings,
    ScheduleSettings,
    Settings,
    WarehouseSettings,
    check_data_dir,
    read_settings,
)

SANDBOX_DATA_DIR = "data/sandbox"
"""The sandbox's own data folder (``$POS_ETL_DATA_DIR`` moves it): never a configured
lake's default (``data``), so a command run without its config cannot write the
sandbox's receipts there."""


def sandbox_settings(data_dir: Path | str = SANDBOX_DATA_DIR, start_date: date | None = None
                     ) -> Settings:
    """Settings for the built-in sandbox's three locations. The sandbox serves any date;
    their history starts at ``start_date``, by default a week before today (what
    ``make demo`` loads: nothing is missing after it)."""
    from pos_sandbox import world
    from pos_sandbox.bank import ACQUIRERS, account_iban
    from pos_sandbox.receipts import CASH_ACCOUNTS
    from pos_sandbox.server import HISTORY_DAYS

    start_date = start_date or date.today() - timedelta(days=HISTORY_DAYS)
    return Settings(
        schedule=ScheduleSettings(start_date=start_date),
        warehouse=WarehouseSettings(data_dir=Path(data_dir)),
        accounting=AccountingSettings(
            pass_through=[PassThrough(  # the hotel's tourist tax
                name=world.TOURIST_TAX, products=world.tourist_tax_products(),
                account=world.TOURIST_TAX_ACCOUNT)],
            accounts=AccountsSettings(payment_accounts=world.CONFIG_PAYMENT_ACCOUNTS,
                                      non_revenue_accounts=world.CONFIG_GROUP_ACCOUNTS)),
        bank=BankSettings(
            accounts=[BankAccount(iban=account_iban(loc.id), location=loc.id)
                      for loc in world.LOCATIONS],
            acquirers=[Acquirer(name=a.name, payment_types=[card], pays_after_days=a.days,
                                fee_percent=a.rate * 100) for card, a in ACQUIRERS.items()],
            deposit_accounts=[CASH_ACCOUNTS["transit"]]),
        locations=[
            LocationSettings(id=loc.id, short_code=loc.short_code, timezone=loc.timezone,
                             api_key_env=f"POS_SANDBOX_KEY_{loc.id}",
                             business_day_starts=loc.business_day_starts, name=loc.name)
            for loc in world.LOCATIONS
        ],
    )


def load_settings(path: str | Path | None = None,
                  say: Callable[[str], None] | None = None) -> Settings:
    """Settings from ``path``, else from ``$POS_ETL_CONFIG``, else the built-in sandbox's
    (its data in ``$POS_ETL_DATA_DIR``, default ``SANDBOX_DATA_DIR``), which ``say`` is
    told of."""
    path = path or os.environ.get(CONFIG_ENV)
    if path:
        return read_settings(path)
    settings = sandbox_settings(os.environ.get("POS_ETL_DATA_DIR", SANDBOX_DATA_DIR))
    check_data_dir("POS_ETL_DATA_DIR", settings.warehouse.data_dir)
    if say is not None:
        say(f"no config (--config or ${CONFIG_ENV}): using the built-in sandbox, its data "
            f"in {settings.warehouse.data_dir}")
    return settings
