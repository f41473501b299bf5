"""The config's ``[accounting]`` sections: vouchers, what is collected for others, the
chart of accounts (presets and overrides) and the booking formats' headers."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from pipeline.core.charts import Chart, ChartError, load_chart
from pipeline.core.config_base import StrictModel, check_zone

_ACCOUNT = re.compile(r"[0-9]{1,9}")

MONTH_DAY = r"^(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"
"""A day of the year as MM-DD."""


PLACEHOLDER_CONSULTANT, PLACEHOLDER_CLIENT = 1001, 1
"""DATEV's Berater and Mandant as shipped: placeholders, not a client's numbers."""


@dataclass(frozen=True)
class ChartOfAccounts:
    """The accounts the daily close books to, resolved: the chart's defaults (its file,
    ``pipeline.core.charts``), overridden by ``[accounting.accounts]``, and by the
    account keys an older config has in ``[accounting.datev]``."""

    chart: str
    """The chart's id (``ekr``, ``skr03``, ``skr04``, a client's own)."""
    revenue_accounts: dict[str, str]
    """Revenue account per tax rate in percent (DATEV: automatic accounts, so the VAT is
    posted from the account)."""
    tip_account: str
    """Where tips post (passed on to the staff)."""
    non_revenue_accounts: dict[str, str]
    """Account per non-revenue payment group (a voucher-sale group: the voucher account);
    a group without one posts to the suspense account."""
    clearing_account: str
    """Every booking of a daily close passes through it (it nets to 0)."""
    suspense_account: str
    """What has no account of its own, and a day's difference."""
    cash_account: str
    """Cash payments whose ``fibuAccountNr`` is not a cash account of the chart."""
    transit_account: str
    """Cash on its way to the bank (Geldtransit): the counter account the sandbox's
    Kassabuch records name, for the accountant's mapping."""
    voucher_account: str = ""
    """Multi-purpose vouchers: credited at the sale, debited at the redemption."""
    card_transit_account: str = ""
    bank_account: str = ""
    receivable_account: str = ""
    card_fees_account: str = ""
    payment_accounts: dict[str, str] = field(default_factory=dict)
    """The config's account per payment type: by ``paymentType.name``, or ``id:<id>``."""
    definition: Chart | None = None
    """The chart's roles and ranges."""
    account_length: int = 4
    """Digits of a general ledger account (DATEV's Sachkontenlänge)."""

    @property
    def datev_chart(self) -> str:
        """The header's Sachkontenrahmen: ``03``/``04`` for DATEV's SKR, else empty."""
        return self.definition.datev_chart if self.definition else ""

    @property
    def fingerprint(self) -> str:
        """A digest of the chart's ranges, the account length, the payment accounts and
        the voucher account: what the warehouse's macros were made of, beyond the
        accounts an export asks them one by one."""
        ranges = sorted((role, tuple(map(str, r)))
                        for role, r in (self.definition.ranges if self.definition else {})
                        .items())
        text = repr((ranges, self.account_length, sorted(self.payment_accounts.items()),
                     self.voucher_account))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def role_account(self, role: str) -> str:
        """The account of a single-account role (``pipeline.core.charts``)."""
        return getattr(self, "transit_account" if role == "cash_transit"
                       else f"{role}_account")


def chart_defaults(chart: Chart) -> dict[str, object]:
    """A chart's default accounts as ``ChartOfAccounts`` fields."""
    out: dict[str, object] = {"revenue_accounts": dict(chart.revenue_accounts)}
    for role, account in chart.accounts.items():
        out["transit_account" if role == "cash_transit" else f"{role}_account"] = account
    return out


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
    alike): a chart we ship or the client's own, any account of it overridden, and the
    account of each payment type."""

    chart: Literal["ekr", "skr03", "skr04"] = "ekr"
    """``ekr`` (Austria), ``skr03`` or ``skr04`` (Germany, DATEV's standard charts)."""
    chart_file: Path | None = None
    """The client's own chart, a file of the shipped charts' form (relative: to the
    config file's folder); it replaces ``chart``."""
    transit_account: str | None = None
    voucher_account: str | None = None
    card_transit_account: str | None = None
    bank_account: str | None = None
    receivable_account: str | None = None
    card_fees_account: str | None = None
    payment_accounts: dict[str, str] = {}
    """The account each payment type's payments are debited to: by ``paymentType.name``
    or ``"id:<paymentType.id>"``. Unmapped, a payment type uses the POS's
    ``fibuAccountNr`` where it fits the chart's ranges (cash: the cash account; a
    voucher: the voucher account), else an export refuses it by name."""

    @field_validator("transit_account", "voucher_account", "card_transit_account",
                     "bank_account", "receivable_account", "card_fees_account")
    @classmethod
    def _role(cls, value: str | None) -> str | None:
        return _check_account(value)

    @field_validator("payment_accounts")
    @classmethod
    def _payments(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not key.strip() or key.startswith("id:") and not key[3:].isdigit():
                raise ValueError(f"payment type {key!r}: name it by paymentType.name or "
                                 "as \"id:<paymentType.id>\"")
        return _check_accounts(value)


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
    """The booking symbol of the daily closes and of the cash the till moves to the bank
    (``KA``: Kassa)."""
    bank_buchsymbol: str = Field("BK", pattern=r"^[A-Z0-9]{1,2}$")
    """The booking symbol of the bank's entries: payouts, card fees, chargebacks, cash
    deposits (``BK``: Bank)."""
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
    def chart(self) -> Chart:
        """The chart of accounts in use: ``[accounting.accounts] chart_file``'s, else the
        shipped ``chart``."""
        return load_chart(self.accounts.chart, self.accounts.chart_file)

    @property
    def chart_of_accounts(self) -> ChartOfAccounts:
        """The accounts the bookings use: the chart's defaults, overridden by
        ``[accounting.datev]``'s account keys (an older config's), then by
        ``[accounting.accounts]``'s; a voucher-sale group's account is the voucher
        account unless ``non_revenue_accounts`` names another."""
        chart = self.chart
        resolved = chart_defaults(chart)
        groups: dict[str, str] = {}
        for section in (self.datev, self.accounts):
            for name in [*resolved, "non_revenue_accounts"]:
                value = getattr(section, name, None)
                if value is None:
                    continue
                if name == "non_revenue_accounts":
                    groups.update(value)
                else:
                    resolved[name] = value
        voucher = resolved["voucher_account"]
        resolved["non_revenue_accounts"] = {
            **{group: voucher for group in self.voucher_sale_groups}, **groups}
        return ChartOfAccounts(chart.id, **resolved,
                               payment_accounts=dict(self.accounts.payment_accounts),
                               definition=chart, account_length=self.datev.account_length)

    @model_validator(mode="after")
    def _chart(self) -> AccountingSettings:
        if self.accounts.chart_file is None or self.accounts.chart_file.is_absolute():
            try:
                self.chart  # noqa: B018  (read: a chart that cannot be used is a config error)
            except ChartError as exc:
                raise ValueError(str(exc)) from None
        return self

    @field_validator("ledger_timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        return None if value is None else check_zone(value)
