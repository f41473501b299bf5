"""The daily closes and the bank's side as bookings, whatever the accounting software:
DATEV and BMD files are both written from these.

The bookings are the warehouse's ``rpt_bookings``. A daily close's (``rpt_daily_close_bookings``)
go through the clearing account (revenue per tax rate, gross after discounts, tips and
each non-revenue payment group credited to their accounts; each payment type's payments
debited to its ``fibuAccountNr``; a day's difference to the suspense account), so per
day the clearing account nets to 0. The bank's side (``rpt_bank_bookings``, ``[bank]
book``) books the payouts, card fees, chargebacks and cash deposits of the configured bank
accounts and the cash the till moved to the bank, through the transit accounts. Here they
get the location's short code and cost centre.

A booking period is a calendar month within one fiscal year: one file per period.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from anyascii import anyascii

from pipeline.core.accounting_settings import ChartOfAccounts, PassThrough
from pipeline.core.bank_settings import BankSettings
from pipeline.core.charts import SINGLE_ACCOUNT_ROLES
from pipeline.core.outcomes import ConfigError
from pipeline.core.settings import LocationSettings, Settings

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

ENCODING = "cp1252"
"""DATEV and BMD read ANSI (Windows-1252) text."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class BookingError(Exception):
    """A value cannot be booked; the message names where it comes from."""


class ChartViolation(BookingError, ConfigError):
    """An account outside the chart's ranges for its role, or a payment type without an
    account: the config must say more (exit 2); the message names the line to add."""


@dataclass(frozen=True)
class Booking:
    """``amount`` debited to ``account`` and credited to ``counter`` (a negative amount
    the other way round). A revenue booking carries its ``tax_rate`` (percent) and the
    ``tax`` included in its amount. ``where`` names its origin for an error: location,
    date and what is booked."""

    amount: Decimal
    account: str
    counter: str
    day: date
    document: str
    text: str
    where: str
    location_id: int
    cost_center: str | None = None
    tax_rate: Decimal | None = None
    tax: Decimal | None = None
    kind: str = ""
    """revenue, tips, pass_through, non_revenue, payment, difference (a daily close);
    payout, card_fee, chargeback, deposit, cash_to_bank (the bank's side); correction."""
    original_date: date | None = None
    """The business date a correction corrects (None: ``day``)."""
    account_role: str = ""
    """The role of ``account`` in the chart (``pipeline.core.charts``); empty: not
    checked (a correction, a closed period's booking)."""
    counter_role: str = ""


@dataclass(frozen=True)
class Period:
    """A booking period: ``first`` to ``last`` (a calendar month, cut where a fiscal year
    starts within it), in the fiscal year beginning ``year_start``."""

    first: date
    last: date
    year_start: date

    @property
    def name(self) -> str:
        """``2026-11`` for a whole month; the dates where a fiscal year cuts it."""
        if self.first.day == 1 and (self.last + timedelta(days=1)).day == 1:
            return f"{self.first:%Y-%m}"
        return f"{self.first}_{self.last}"


def fiscal_year_start(day: date, start: str) -> date:
    """The first day of the fiscal year ``day`` lies in (``start``: MM-DD)."""
    month, dom = (int(x) for x in start.split("-"))
    begin = date(day.year, month, dom)
    return begin if begin <= day else date(day.year - 1, month, dom)


def period_of(day: date, year_start: str) -> Period:
    """The booking period ``day`` belongs to."""
    begin = fiscal_year_start(day, year_start)
    first = max(day.replace(day=1), begin)
    month_end = (day.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
    next_year = fiscal_year_start(month_end, year_start)
    last = month_end if next_year == begin else next_year - timedelta(days=1)
    return Period(first, last, begin)


def suspense_warning(bookings: list[Booking], suspense: str) -> str | None:
    """What went to the suspense account, for the accountant: how many bookings of how
    much, per cause (a payment group without an account of its own, the days'
    differences), and the setting or report that clears each; None if nothing did."""
    causes: dict[str, list[Decimal]] = {}
    for b in bookings:
        if suspense not in (b.account, b.counter) or not b.amount:
            continue
        if b.kind == "non_revenue":
            group = b.where.split("payment group ", 1)[-1]
            cause = (f"payment group {group} has no account: add it to [accounting.accounts] "
                     "non_revenue_accounts")
        elif b.kind == "difference":
            cause = ("days whose payments do not cover revenue, tips and non-revenue "
                     "settlements (rpt_daily_close.difference_amount)")
        else:
            cause = f"{b.kind or 'other'} bookings"
        causes.setdefault(cause, []).append(abs(b.amount))
    if not causes:
        return None
    count = sum(len(v) for v in causes.values())
    total = sum((sum(v, Decimal(0)) for v in causes.values()), Decimal(0))
    detail = "; ".join(f"{len(v)} of {sum(v, Decimal(0)):,.2f} EUR: {cause}"
                       for cause, v in sorted(causes.items()))
    return (f"{count} booking(s) of {total:,.2f} EUR went to the suspense account {suspense} "
            f"({detail})")


def by_period(bookings: list[Booking], year_start: str) -> dict[Period, list[Booking]]:
    """The bookings of each booking period, periods in order."""
    out: dict[Period, list[Booking]] = {}
    for b in sorted(bookings, key=lambda b: (b.day, b.location_id)):
        out.setdefault(period_of(b.day, year_start), []).append(b)
    return out


def rate_key(rate: Decimal) -> str:
    """A tax rate as the config names it (``20``, ``10``, ``5.5``)."""
    return format(Decimal(rate).normalize(), "f")


def check_accounts(con: duckdb.DuckDBPyConnection, accounts: ChartOfAccounts,
                   pass_through: list[PassThrough] = (),
                   bank: BankSettings | None = None) -> None:
    """Raise ``BookingError`` unless the warehouse was built with these accounts (its
    macros answer as the config does, for every configured rate and every rate it has
    revenue at, and for ``bank``'s accounts): a changed account takes a build first."""
    rates = {rate_key(Decimal(rate)): account
             for rate, account in accounts.revenue_accounts.items()}
    for (rate,) in con.execute("select distinct tax_rate_percent from rpt_vat_by_rate"
                               " order by 1").fetchall():
        rates.setdefault(rate_key(rate), None)
    asked = [(f"revenue_account({rate})", account) for rate, account in rates.items()]
    asked += [(f"non_revenue_account('{group.replace(chr(39), chr(39) * 2)}')", account)
              for group, account in accounts.non_revenue_accounts.items()]
    asked += [(f"booking_account('{role}')", accounts.role_account(role))
              for role in SINGLE_ACCOUNT_ROLES]
    asked += [("chart_fingerprint()", accounts.fingerprint)]
    if bank is not None:
        asked += [("books_bank()", bank.book)]
        asked += [(f"bank_ledger_account('{a.iban}')", a.account or accounts.role_account("bank"))
                  for a in bank.accounts]
    asked += [(f"pass_through_account('{product}')", item.account)
              for item in pass_through for product in item.products]
    import duckdb  # not at import: the CLI reads its arguments without DuckDB

    try:
        built = con.execute("select " + ", ".join(sql for sql, _ in asked)).fetchone()
    except duckdb.Error:
        built = [None] * len(asked)
    changed = [("the chart's ranges or the payment accounts" if sql == "chart_fingerprint()"
                else f"[bank] book: {was} -> {now}" if sql == "books_bank()"
                else sql.split("(")[0] + f" {sql.split('(', 1)[1][:-1]}: {was} -> {now}")
               for (sql, now), was in zip(asked, built, strict=True) if was != now]
    if changed:
        raise BookingError("the warehouse was built with other accounts than the config "
                           f"names ([accounting.accounts]; {'; '.join(changed)}): run "
                           "`pos-etl build` first")


KINDS = {
    "revenue": "revenue at {rate}", "tips": "tips", "pass_through": "{text} collected for others",
    "non_revenue": "payment group {text!r}", "payment": "payment type {text!r}",
    "difference": "the day's difference", "payout": "bank entry {entry}: {text}",
    "card_fee": "bank entry {entry}: {text}", "chargeback": "bank entry {entry}: {text}",
    "deposit": "bank entry {entry}: {text}", "cash_to_bank": "cash book record {record}",
}
"""What a booking of each kind (``rpt_bookings.booking_kind``) is, for an error."""
BANK_KINDS = frozenset({"payout", "card_fee", "chargeback", "deposit", "cash_to_bank"})
"""The kinds of the bank's side (``rpt_bank_bookings``)."""


def booked(con: duckdb.DuckDBPyConnection, start: date | None, end: date | None,
           location_ids: list[int] | None, locations: Mapping[int, LocationSettings],
           accounts: ChartOfAccounts) -> list[Booking]:
    """The bookings (``rpt_bookings``: the daily closes' and the bank's side) dated
    ``start`` to ``end`` at ``location_ids`` (None: all), with each location's short code
    in the text and its cost centre. A payment type without an account in the chart is
    refused (``ChartViolation``) naming them all, with the line of ``[accounting.accounts]
    payment_accounts`` to add."""
    where = ["true"] + [f"business_date >= DATE '{start.isoformat()}'"] * bool(start) \
        + [f"business_date <= DATE '{end.isoformat()}'"] * bool(end)
    if location_ids:
        where.append(f"location_id in ({', '.join(str(int(x)) for x in location_ids)})")
    rows = con.execute(f"""
        select location_id, business_date, document_number, debit_account, credit_account,
               amount, tax_rate_percent, tax_amount, booking_kind, booking_text,
               debit_role, credit_role, pos_accounts, bank_entry, transaction_id
        from rpt_bookings where {' and '.join(where)}
        order by location_id, business_date, document_number, booking_number""").fetchall()
    out, unmapped = [], {}
    for (loc, day, doc, account, counter, amount, rate, tax, kind, text, account_role,
         counter_role, pos_accounts, entry, record) in rows:
        place = locations.get(loc)
        what = KINDS[kind].format(rate=text.removeprefix("Erlöse "), text=text, entry=entry,
                                  record=record)
        if counter is None:
            raise BookingError(
                f"location {loc}, business date {day}: no revenue account for tax rate "
                f"{rate_key(rate)} %; add it to [accounting.accounts] revenue_accounts")
        if account is None:
            unmapped.setdefault(text, (pos_accounts, loc, day))
            continue
        out.append(Booking(
            Decimal(amount), account, counter, day, doc,
            f"{text} {place.short_code if place else loc}",
            f"location {loc}, {'booked' if kind in BANK_KINDS else 'business date'} {day}, "
            f"{what}", loc,
            place.cost_center if place else None,
            None if rate is None else Decimal(rate), None if tax is None else Decimal(tax),
            kind, account_role=account_role or "", counter_role=counter_role or ""))
    if unmapped:
        raise unmapped_payments(unmapped, accounts)
    return out


def unmapped_payments(unmapped: dict[str, tuple], accounts: ChartOfAccounts
                      ) -> ChartViolation:
    """The refusal of payment types without an account in the chart: each named with the
    POS's accounts and where it was first met, and the config lines to add."""
    chart = accounts.definition
    named = "; ".join(
        f"{t!r} (the POS's account {pos or 'none'}; first location {loc}, business date "
        f"{day})" for t, (pos, loc, day) in sorted(unmapped.items()))
    hint = accounts.card_transit_account
    lines = ", ".join(f'{_toml_key(t)} = "{hint}"' for t in sorted(unmapped))
    return ChartViolation(
        f"{len(unmapped)} payment type(s) without an account in {chart.name}: {named}. A "
        f"payment type's account must lie in the chart's ranges for payments "
        f"({chart.ranges_text('payment')}); add to [accounting.accounts] payment_accounts "
        f"= {{ {lines} }} (the card transit account {hint} shown; a room charge's is a "
        f"receivable, {accounts.receivable_account}); `pos-etl accounts` shows the mapping "
        "in force")


def _toml_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else \
        '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


CONFIG_LINES = {
    "revenue": "[accounting.accounts] revenue_accounts = {{ \"<rate>\" = \"{account}\" }}",
    "pass_through": "[[accounting.pass_through]] account = \"{account}\"",
    "non_revenue": "[accounting.accounts] non_revenue_accounts = "
                   "{{ \"<group>\" = \"{account}\" }}",
    "payment": "[accounting.accounts] payment_accounts = "
               "{{ \"<payment type>\" = \"{account}\" }}",
    "cash_transit": "[accounting.accounts] transit_account = \"{account}\"",
}
"""The line of the config that sets a role's account."""


def check_chart(bookings: list[Booking], accounts: ChartOfAccounts) -> None:
    """Raise ``ChartViolation`` unless every account of ``bookings`` lies in the chart's
    ranges for its role, naming each account outside them, what books it, and the line
    of the config to change (a correction or a closed period's booking has no role: it
    books what was booked)."""
    chart = accounts.definition
    wrong: dict[tuple[str, str], str] = {}
    for b in bookings:
        for account, role in ((b.account, b.account_role), (b.counter, b.counter_role)):
            if role and not chart.fits(role, account, accounts.account_length):
                wrong.setdefault((role, account), b.where)
    if not wrong:
        return
    parts = []
    for (role, account), where in sorted(wrong.items()):
        default = chart.accounts.get(role) or (
            next(iter(chart.revenue_accounts.values())) if role == "revenue" else
            f"<an account in {chart.ranges_text(role)}>")
        line = CONFIG_LINES.get(role, f"[accounting.accounts] {role}_account = \"{{account}}\""
                                ).format(account=default)
        parts.append(f"account {account} ({where}) lies outside {chart.name}'s ranges for "
                     f"{role} ({chart.ranges_text(role)}): set {line}")
    raise ChartViolation(f"{len(parts)} account(s) outside the chart of accounts "
                         f"{chart.name}: " + "; ".join(parts))


@dataclass
class Transliteration:
    """Characters outside Windows-1252 written as their closest ASCII (``ł`` as ``l``)."""

    characters: Counter = field(default_factory=Counter)
    bookings: int = 0

    def __bool__(self) -> bool:
        return bool(self.characters)

    def merged(self, other: Transliteration) -> Transliteration:
        return Transliteration(self.characters + other.characters,
                               self.bookings + other.bookings)

    def warning(self, medium: str) -> str:
        shown = ", ".join(f"{c} -> {anyascii(c) or '?'}" for c in sorted(self.characters))
        return (f"{sum(self.characters.values())} character(s) outside Windows-1252 in "
                f"{self.bookings} booking text(s) were transliterated for {medium}: {shown}")


def ansi_text(value: str, seen: Transliteration | None = None) -> str:
    """Text for an accounting file: control characters (line breaks, NUL, tabs) as
    spaces, characters outside Windows-1252 transliterated (and counted in ``seen``)."""
    text = _CONTROL.sub(" ", value)
    try:
        text.encode(ENCODING)
        return text
    except UnicodeEncodeError:
        pass
    out = []
    for char in text:
        try:
            char.encode(ENCODING)
            out.append(char)
        except UnicodeEncodeError:
            out.append(anyascii(char) or "?")
            if seen is not None:
                seen.characters[char] += 1
    if seen is not None:
        seen.bookings += 1
    return "".join(out)


@dataclass(frozen=True)
class BookingFormat:
    """A booking file's format: one module each (``pipeline.accounting.datev``, ``.bmd``),
    listed in ``pipeline.accounting.formats``."""

    name: str
    """As ``pos-etl export --format`` and ``close-period --format`` take it."""
    title: str
    """As people call it (in warnings)."""
    file_name: str
    """The file of one booking period: ``{}`` is the period (``2026-11``)."""
    write: Callable[[Settings, list[Booking], Period, tuple[date, date], Path,
                     datetime | None, bool, bool], Transliteration]
    """``write(settings, bookings, period, span, target, now, incomplete, locked)``: one
    period's file; ``locked``, a closed period's; returns what was transliterated."""
    placeholders: Callable[[Settings], str | None] = lambda settings: None
    """What of the settings is still a placeholder the format's receiver rejects (a
    warning on export; a closed period's file is refused), or None."""
