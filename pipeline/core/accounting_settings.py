"""The config's ``[accounting]`` sections: vouchers, what is collected for others, the
chart of accounts (presets and overrides) and the booking formats' headers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from pydantic import Field, field_validator, model_validator

from pipeline.core.config_base import StrictModel, check_zone

_ACCOUNT = re.compile(r"[0-9]{1,9}")

MONTH_DAY = r"^(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"
"""A day of the year as MM-DD."""


PLACEHOLDER_CONSULTANT, PLACEHOLDER_CLIENT = 1001, 1
"""DATEV's Berater and Mandant as shipped: placeholders, not a client's numbers."""


@dataclass(frozen=True)
class ChartOfAccounts:
    """The accounts the daily close books to, resolved: a chart's preset, overridden by
    ``[accounting.accounts]``, and by the account keys an older config has in
    ``[accounting.datev]``."""

    chart: str
    revenue_accounts: dict[str, str]
    """Revenue account per tax rate in percent (DATEV: automatic accounts, so the VAT is
    posted from the account)."""
    tip_account: str
    """Where tips post (passed on to the staff)."""
    non_revenue_accounts: dict[str, str]
    """Account per non-revenue payment group; a group without one posts to the suspense
    account."""
    clearing_account: str
    """Every booking of a daily close passes through it (it nets to 0)."""
    suspense_account: str
    """What has no account of its own, and a day's difference."""
    cash_account: str
    """Payments whose payment type carries no ``fibuAccountNr``."""
    transit_account: str
    """Cash on its way to the bank (Geldtransit): the counter account the sandbox's
    Kassabuch records name, for the accountant's mapping."""

    @property
    def datev_chart(self) -> str:
        """The header's Sachkontenrahmen: ``03``/``04`` for DATEV's SKR, else empty."""
        return {"skr03": "03", "skr04": "04"}.get(self.chart, "")


CHARTS: dict[str, dict] = {
    # Austria: Einheitskontenrahmen (EKR), the accounts this project always used
    "ekr": {"revenue_accounts": {"20": "4000", "13": "4020", "10": "4010", "0": "4090"},
            "tip_account": "3790", "non_revenue_accounts": {"Gutscheinverkauf": "3600"},
            "clearing_account": "2890", "suspense_account": "2899", "cash_account": "2700",
            "transit_account": "2880"},
    # Germany: DATEV SKR03 (Erlöse 19 %/7 % as automatic accounts, Durchlaufende Posten as
    # the clearing account and the one after it as the suspense account, Kasse, Geldtransit,
    # tips as owed to the staff, multi-purpose vouchers as other liabilities)
    "skr03": {"revenue_accounts": {"19": "8400", "7": "8300", "0": "8200"},
              "tip_account": "1740", "non_revenue_accounts": {"Gutscheinverkauf": "1700"},
              "clearing_account": "1590", "suspense_account": "1591", "cash_account": "1000",
              "transit_account": "1360"},
    # Germany: DATEV SKR04, the same roles
    "skr04": {"revenue_accounts": {"19": "4400", "7": "4300", "0": "4200"},
              "tip_account": "3720", "non_revenue_accounts": {"Gutscheinverkauf": "3500"},
              "clearing_account": "1370", "suspense_account": "1371", "cash_account": "1600",
              "transit_account": "1460"},
}
"""The chart-of-accounts presets (``[accounting.accounts] chart``): a starting point to
agree with the tax advisor, each account overridable."""


def _check_accounts(value: dict[str, str] | None) -> dict[str, str] | None:
    for key, account in (value or {}).items():
        if not _ACCOUNT.fullmatch(account):
            raise ValueError(f"account {account!r} of {key!r} must be 1 to 9 digits")
    return value


def _check_rates(value: dict[str, str] | None) -> dict[str, str] | None:
    for rate in value or {}:
        if not re.fullmatch(r"\d{1,2}(\.\d{1,2})?", rate):
            raise ValueError(f"tax rate {rate!r} must be a percentage such as 20 or 5.5")
    return value


def _check_account(value: str | None) -> str | None:
    if value is not None and not _ACCOUNT.fullmatch(value):
        raise ValueError(f"account {value!r} must be 1 to 9 digits")
    return value


class _AccountOverrides(StrictModel):
    """Accounts that override a chart's preset (``None``: the preset's)."""

    revenue_accounts: dict[str, str] | None = None
    tip_account: str | None = None
    non_revenue_accounts: dict[str, str] | None = None
    clearing_account: str | None = None
    suspense_account: str | None = None
    cash_account: str | None = None

    @field_validator("revenue_accounts")
    @classmethod
    def _rates(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return _check_accounts(_check_rates(value))

    @field_validator("non_revenue_accounts")
    @classmethod
    def _groups(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return _check_accounts(value)

    @field_validator("tip_account", "clearing_account", "suspense_account", "cash_account")
    @classmethod
    def _account(cls, value: str | None) -> str | None:
        return _check_account(value)


class AccountsSettings(_AccountOverrides):
    """``[accounting.accounts]``: the chart of accounts the bookings use (DATEV and BMD
    alike): a preset, and any account of it overridden."""

    chart: Literal["ekr", "skr03", "skr04"] = "ekr"
    """``ekr`` (Austria), ``skr03`` or ``skr04`` (Germany, DATEV's standard charts)."""
    transit_account: str | None = None

    @field_validator("transit_account")
    @classmethod
    def _transit(cls, value: str | None) -> str | None:
        return _check_account(value)


class DatevSettings(_AccountOverrides):
    """The header of a DATEV Buchungsstapel (EXTF 700). Its account keys are still read
    (an older config's); ``[accounting.accounts]`` is where accounts belong now."""

    consultant_number: int = Field(PLACEHOLDER_CONSULTANT, ge=1001, le=9_999_999)
    """Beraternummer; the default is a placeholder a close refuses (DATEV rejects a
    batch whose numbers are not the client's)."""
    client_number: int = Field(PLACEHOLDER_CLIENT, ge=1, le=99_999)
    """Mandantennummer; the default is a placeholder, as the Beraternummer's."""
    account_length: int = Field(4, ge=4, le=8)
    """Sachkontenlänge: digits of a general ledger account."""
    fiscal_year_start: str | None = Field(None, pattern=MONTH_DAY)
    """Read as ``[accounting] fiscal_year_start`` where that is unset (an older config's)."""
    lock_closed_periods: bool = True
    """A closed period's file carries Festschreibung 1: DATEV locks its bookings at the
    import, as the GoBD ask of a closed period; false leaves them open for the advisor's
    review (and locking to DATEV)."""

    @property
    def has_placeholders(self) -> bool:
        """Berater and Mandant are the defaults, not a real client's."""
        return (self.consultant_number, self.client_number) == \
            (PLACEHOLDER_CONSULTANT, PLACEHOLDER_CLIENT)


class BmdSettings(StrictModel):
    """What a BMD NTCS booking import needs beyond the accounts (``[accounting.accounts]``)."""

    buchsymbol: str = Field("KA", pattern=r"^[A-Z0-9]{1,2}$")
    """The booking symbol of the daily closes (``KA``: Kassa)."""
    tax_code: str = Field("1", pattern=r"^[0-9]{1,2}$")
    """``steuercode`` of the revenue lines: 1, domestic VAT."""


class VoucherCategory(StrictModel):
    """A kind of voucher the till sells, for VAT (the EU voucher directive): a
    single-purpose voucher's sale is revenue at its VAT rate and its redemption is not; a
    multi-purpose voucher's sale is not revenue and its redemption is."""

    name: str = Field(min_length=1)
    """What it is called (the ledger's ``categoryName``, say)."""
    purpose: Literal["single", "multi"] = "multi"
    tax_rate: Decimal | None = Field(None, ge=0, le=100)
    """The VAT rate of a single-purpose voucher (percent)."""
    sale_products: list[int] = []
    """``Item.number`` of the products that sell it on a voucher-sale receipt."""
    payment_types: list[str] = []
    """``paymentType.name`` of the payments that redeem it."""

    @model_validator(mode="after")
    def _single(self) -> VoucherCategory:
        if self.purpose == "single" and self.tax_rate is None:
            raise ValueError(f"voucher category {self.name!r}: a single-purpose voucher "
                             "needs its tax_rate")
        if not self.sale_products and not self.payment_types:
            raise ValueError(f"voucher category {self.name!r}: name its sale_products or "
                             "payment_types (how the till's receipts show it)")
        return self


class PassThrough(StrictModel):
    """Money the till collects for someone else, a tourist tax (Ortstaxe, Kurtaxe, City
    Tax) say: not revenue, no VAT, owed on its own account."""

    name: str = Field(min_length=1)
    """What it is (``Ortstaxe``): the booking text."""
    products: list[int] = Field(min_length=1)
    """``Item.number`` of the lines that collect it."""
    account: str
    """The account it is owed on (a liability, to the municipality say)."""

    @field_validator("account")
    @classmethod
    def _account(cls, value: str) -> str:
        return _check_account(value)


class AccountingSettings(StrictModel):
    voucher_sale_groups: list[str] = ["Gutscheinverkauf"]
    """Payment groups (``paymentGroup.name``) of settlements that sell vouchers."""
    voucher_payment_types: list[str] = ["Gutschein"]
    """Payment types (``paymentType.name``) that redeem a voucher at the till."""
    cash_payment_types: list[str] = ["Bar"]
    """Payment types (``paymentType.name``) paid in cash: the cash book's takings."""
    ledger_timezone: str | None = None
    """Time zone of the voucher ledger's business dates; unset: the first location's."""
    voucher_categories: list[VoucherCategory] = []
    """Vouchers by VAT treatment; a voucher of none is multi-purpose (sale not revenue)."""
    pass_through: list[PassThrough] = []
    """Items collected for someone else (a tourist tax): not revenue, their own account."""
    fiscal_year_start: str | None = Field(None, pattern=MONTH_DAY)
    """First day (MM-DD) of the fiscal year, whose months are the booking periods of every
    booking format; unset: ``[accounting.datev]``'s (an older config's), else 01-01."""
    accounts: AccountsSettings = AccountsSettings()
    datev: DatevSettings = DatevSettings()
    bmd: BmdSettings = BmdSettings()

    @property
    def year_start(self) -> str:
        """The fiscal year's first day (MM-DD): ``fiscal_year_start``, else the DATEV
        section's, else 01-01."""
        return self.fiscal_year_start or self.datev.fiscal_year_start or "01-01"

    @property
    def chart_of_accounts(self) -> ChartOfAccounts:
        """The accounts the bookings use: the chart's preset, overridden by
        ``[accounting.datev]``'s account keys (an older config's), then by
        ``[accounting.accounts]``'s."""
        resolved = dict(CHARTS[self.accounts.chart])
        for section in (self.datev, self.accounts):
            for name in resolved:
                value = getattr(section, name, None)
                if value is not None:
                    resolved[name] = value
        return ChartOfAccounts(self.accounts.chart, **resolved)

    @field_validator("ledger_timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        return None if value is None else check_zone(value)
