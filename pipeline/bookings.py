"""The daily closes as bookings, whatever the accounting software: DATEV and BMD files
are both written from these.

Every booking of a day goes through the clearing account: revenue per tax rate (gross
after discounts), tips and each non-revenue payment group are credited to their
accounts; each payment type's payments are debited to its ``fibuAccountNr``; a day's
difference goes to the suspense account. Per day the clearing account nets to 0.

A booking period is a calendar month within one fiscal year: one file per period.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

import duckdb
from anyascii import anyascii

from pipeline.money import cents
from pipeline.settings import DatevSettings, LocationSettings

ENCODING = "cp1252"
"""DATEV and BMD read ANSI (Windows-1252) text."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class BookingError(Exception):
    """A value cannot be booked; the message names where it comes from."""


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


def by_period(bookings: list[Booking], year_start: str) -> dict[Period, list[Booking]]:
    """The bookings of each booking period, periods in order."""
    out: dict[Period, list[Booking]] = {}
    for b in sorted(bookings, key=lambda b: (b.day, b.location_id)):
        out.setdefault(period_of(b.day, year_start), []).append(b)
    return out


def rate_key(rate: Decimal) -> str:
    """A tax rate as the config names it (``20``, ``10``, ``5.5``)."""
    return format(Decimal(rate).normalize(), "f")


def daily_close_bookings(con: duckdb.DuckDBPyConnection, close_sql: str,
                         accounts: DatevSettings,
                         locations: Mapping[int, LocationSettings]) -> list[Booking]:
    """The bookings of the daily closes that ``close_sql`` selects (see the module)."""
    days = con.execute(f"select location_id, business_date, tip_amount, difference_amount "
                       f"from ({close_sql})").fetchall()
    selected = {(loc, day) for loc, day, *_ in days}

    def per_day(sql: str) -> dict[tuple[int, date], list[tuple]]:
        found: dict[tuple[int, date], list[tuple]] = {}
        for loc, day, *rest in con.execute(sql).fetchall():
            if (loc, day) in selected:
                found.setdefault((loc, day), []).append(tuple(rest))
        return found

    revenue = per_day("select location_id, business_date, tax_rate_percent, "
                      "gross_after_discount, vat_after_discount from rpt_vat_by_rate "
                      "order by all")
    groups = per_day("select location_id, business_date, coalesce(payment_group_name, ''), "
                     "cents(sum(total_amount)) from fct_receipts where is_settlement and "
                     "not is_revenue_effective group by all order by all")
    payments = per_day("select location_id, business_date, payment_type_name, "
                       "fibu_account_nr, payment_amount from rpt_daily_close_payments "
                       "order by all")
    clearing = accounts.clearing_account
    out: list[Booking] = []
    for loc, day, tips, difference in sorted(days):
        place = locations.get(loc)
        code = place.short_code if place else str(loc)
        doc = f"Z{loc}-{day:%Y%m%d}"

        def book(amount, account, counter, text, what, rate=None, tax=None, day=day,
                 doc=doc, loc=loc, place=place):
            if amount:
                out.append(Booking(
                    cents(amount), account, counter, day, doc, text,
                    f"location {loc}, business date {day}, {what}", loc,
                    place.cost_center if place else None, rate,
                    None if tax is None else cents(tax)))

        for rate, amount, vat in revenue.get((loc, day), []):
            account = accounts.revenue_accounts.get(rate_key(rate))
            if account is None:
                raise BookingError(
                    f"location {loc}, business date {day}: no revenue account for tax rate "
                    f"{rate_key(rate)} %; add it to [accounting.datev] revenue_accounts")
            book(amount, clearing, account, f"Erlöse {rate_key(rate)} % {code}",
                 f"revenue at {rate_key(rate)} %", Decimal(rate), vat)
        book(tips, clearing, accounts.tip_account, f"Trinkgeld {code}", "tips")
        for group, amount in groups.get((loc, day), []):
            account = accounts.non_revenue_accounts.get(group, accounts.suspense_account)
            book(amount, clearing, account, f"{group or 'ohne Zahlungsgruppe'} {code}",
                 f"payment group {group!r}")
        for name, fibu, amount in payments.get((loc, day), []):
            book(amount, fibu or accounts.cash_account, clearing, f"{name} {code}",
                 f"payment type {name!r}")
        book(difference, clearing, accounts.suspense_account, f"Kassendifferenz {code}",
             "the day's difference")
    return out


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
