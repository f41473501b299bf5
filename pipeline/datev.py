"""The daily closes as a DATEV Buchungsstapel (EXTF 700, format version 13).

Every field is checked against DATEV's format before it is written, because its values
come partly from the POS: a payment type's ``fibuAccountNr`` and name are typed by
restaurant staff. Accounts are digits of the configured length (one more for personal
accounts), else the export is refused naming location, date, payment type and value;
text fields lose control characters (a line break would split the record), keep quotes
doubled as DATEV asks, and characters outside Windows-1252 are transliterated (``ł`` to
``l``) and counted. Every record has the format's 125 columns.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
from anyascii import anyascii

from pipeline.money import cents
from pipeline.settings import DatevSettings

DATEV_COLUMNS = (
    "Umsatz (ohne Soll/Haben-Kz)", "Soll/Haben-Kennzeichen", "WKZ Umsatz", "Kurs",
    "Basis-Umsatz", "WKZ Basis-Umsatz", "Konto", "Gegenkonto (ohne BU-Schlüssel)",
    "BU-Schlüssel", "Belegdatum", "Belegfeld 1", "Belegfeld 2", "Skonto", "Buchungstext",
    "Postensperre", "Diverse Adressnummer", "Geschäftspartnerbank", "Sachverhalt",
    "Zinssperre", "Beleglink",
    *(f"Beleginfo - {kind} {n}" for n in range(1, 9) for kind in ("Art", "Inhalt")),
    "KOST1 - Kostenstelle", "KOST2 - Kostenstelle", "Kost-Menge", "EU-Land u. UStID",
    "EU-Steuersatz", "Abw. Versteuerungsart", "Sachverhalt L+L", "Funktionsergänzung L+L",
    "BU 49 Hauptfunktionstyp", "BU 49 Hauptfunktionsnummer", "BU 49 Funktionsergänzung",
    *(f"Zusatzinformation - {kind} {n}" for n in range(1, 21) for kind in ("Art", "Inhalt")),
    "Stück", "Gewicht", "Zahlweise", "Forderungsart", "Veranlagungsjahr",
    "Zugeordnete Fälligkeit", "Skontotyp", "Auftragsnummer", "Buchungstyp",
    "Ust-Schlüssel (Anzahlungen)", "EU-Land (Anzahlungen)", "Sachverhalt L+L (Anzahlungen)",
    "EU-Steuersatz (Anzahlungen)", "Erlöskonto (Anzahlungen)", "Herkunft-Kz",
    "Buchungs GUID", "KOST-Datum", "SEPA-Mandatsreferenz", "Skontosperre",
    "Gesellschaftername", "Beteiligtennummer", "Identifikationsnummer", "Zeichnernummer",
    "Postensperre bis", "Bezeichnung SoBil-Sachverhalt", "Kennzeichen SoBil-Buchung",
    "Festschreibung", "Leistungsdatum", "Datum Zuord. Steuerperiode", "Fälligkeit",
    "Generalumkehr (GU)", "Steuersatz", "Land", "Abrechnungsreferenz",
    "BVV-Position (Betriebsvermögensvergleich)", "EU-Mitgliedstaat u. UStID (Ursprung)",
    "EU-Steuersatz (Ursprung)", "Abw. Skontokonto",
)
"""The 125 columns of a Buchungsstapel, format version 13 of EXTF 700, in their order."""
assert len(DATEV_COLUMNS) == 125

ENCODING = "cp1252"
"""DATEV reads ANSI (Windows-1252) text."""
TEXT_LENGTH = 60
"""Characters of a Buchungstext."""
MAX_AMOUNT = Decimal("9999999999.99")
"""The largest Umsatz DATEV takes (ten digits before the comma)."""
_ACCOUNT = re.compile(r"[0-9]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class DatevError(Exception):
    """A value cannot be booked as DATEV asks; the message names where it comes from."""


@dataclass(frozen=True)
class Booking:
    """One line of the Buchungsstapel: ``amount`` debited to ``account`` and credited to
    ``counter`` (a negative amount is written as the opposite side). ``where`` names
    its origin for an error: location, date and what is booked."""

    amount: Decimal
    account: str
    counter: str
    day: date
    document: str
    text: str
    where: str


@dataclass
class Transliteration:
    """Characters outside Windows-1252 written as their closest ASCII (``ł`` as ``l``)."""

    characters: Counter = field(default_factory=Counter)
    bookings: int = 0

    def __bool__(self) -> bool:
        return bool(self.characters)

    def warning(self) -> str:
        shown = ", ".join(f"{c} -> {anyascii(c) or '?'}" for c in sorted(self.characters))
        return (f"{sum(self.characters.values())} character(s) outside Windows-1252 in "
                f"{self.bookings} booking text(s) were transliterated for DATEV: {shown}")


def _fiscal_year_start(day: date, start: str) -> date:
    month, dom = (int(x) for x in start.split("-"))
    begin = date(day.year, month, dom)
    return begin if begin <= day else date(day.year - 1, month, dom)


def daily_close_bookings(con: duckdb.DuckDBPyConnection, close_sql: str,
                         datev: DatevSettings, short_codes: dict[int, str]) -> list[Booking]:
    """The bookings of the daily closes that ``close_sql`` selects, through the clearing
    account: revenue per tax rate, tips and each non-revenue payment group are credited
    to their accounts; each payment type's payments are debited to its
    ``fibuAccountNr``; a day's difference goes to the suspense account. Per day the
    clearing account nets to 0."""
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
                      "gross_after_discount from rpt_vat_by_rate order by all")
    groups = per_day("select location_id, business_date, coalesce(payment_group_name, ''), "
                     "cents(sum(total_amount)) from fct_receipts where is_settlement and "
                     "not is_revenue_effective group by all order by all")
    payments = per_day("select location_id, business_date, payment_type_name, "
                       "fibu_account_nr, payment_amount from rpt_daily_close_payments "
                       "order by all")
    clearing = datev.clearing_account
    out: list[Booking] = []
    for loc, day, tips, difference in sorted(days):
        code = short_codes.get(loc, str(loc))
        doc = f"Z{loc}-{day:%Y%m%d}"

        def book(amount, account, counter, text, what, day=day, doc=doc, loc=loc):
            if amount:
                out.append(Booking(cents(amount), account, counter, day, doc, text,
                                   f"location {loc}, business date {day}, {what}"))

        for rate, amount in revenue.get((loc, day), []):
            account = datev.revenue_accounts.get(_rate_key(rate))
            if account is None:
                raise DatevError(
                    f"location {loc}, business date {day}: no revenue account for tax rate "
                    f"{_rate_key(rate)} %; add it to [accounting.datev] revenue_accounts")
            book(amount, clearing, account, f"Erlöse {_rate_key(rate)} % {code}",
                 f"revenue at {_rate_key(rate)} %")
        book(tips, clearing, datev.tip_account, f"Trinkgeld {code}", "tips")
        for group, amount in groups.get((loc, day), []):
            account = datev.non_revenue_accounts.get(group, datev.suspense_account)
            book(amount, clearing, account, f"{group or 'ohne Zahlungsgruppe'} {code}",
                 f"payment group {group!r}")
        for name, fibu, amount in payments.get((loc, day), []):
            book(amount, fibu or datev.cash_account, clearing, f"{name} {code}",
                 f"payment type {name!r}")
        book(difference, clearing, datev.suspense_account, f"Kassendifferenz {code}",
             "the day's difference")
    return out


def _rate_key(rate: Decimal) -> str:
    return format(Decimal(rate).normalize(), "f")


def check_booking(b: Booking, account_length: int) -> None:
    """Raise ``DatevError`` unless the booking's accounts and amount fit DATEV's fields:
    accounts digits only, at most ``account_length`` + 1 of them (personal accounts),
    the amount at most ten digits before the comma."""
    for name, account in (("account", b.account), ("counter account", b.counter)):
        if not _ACCOUNT.fullmatch(account) or len(account) > account_length + 1:
            raise DatevError(f"{b.where}: {name} {account!r} is not a DATEV account (digits "
                             f"only, at most {account_length + 1}: account_length "
                             f"{account_length} + 1 for personal accounts); correct the "
                             "payment type's fibuAccountNr in the POS or the account in "
                             "[accounting.datev]")
    if abs(b.amount) > MAX_AMOUNT:
        raise DatevError(f"{b.where}: amount {b.amount} is beyond DATEV's ten digits")


def text_field(value: str, seen: Transliteration | None = None,
               length: int | None = None) -> str:
    """A DATEV text field: control characters (line breaks, NUL, tabs) as spaces,
    characters outside Windows-1252 transliterated (and counted in ``seen``), cut to
    ``length``, quoted with inner quotes doubled."""
    text = _CONTROL.sub(" ", value)
    try:
        text.encode(ENCODING)
    except UnicodeEncodeError:
        out = []
        for char in text:
            try:
                char.encode(ENCODING)
                out.append(char)
            except UnicodeEncodeError:
                out.append(anyascii(char) or "?")
                if seen is not None:
                    seen.characters[char] += 1
        text = "".join(out)
        if seen is not None:
            seen.bookings += 1
    if length is not None:
        text = text[:length]
    return '"' + text.replace('"', '""') + '"'


def write_datev(con: duckdb.DuckDBPyConnection, close_sql: str,
                span: tuple[date | None, date | None], datev: DatevSettings, target: Path,
                short_codes: dict[int, str],
                now: datetime | None = None) -> tuple[int, Transliteration]:
    """A Buchungsstapel of the daily closes ``close_sql`` selects over ``span`` (the
    asked start and end, None for open). Returns the bookings written and what was
    transliterated.

    One file holds one fiscal year (DATEV's rule), so the range must lie within one."""
    bookings = daily_close_bookings(con, close_sql, datev, short_codes)
    if not bookings:
        raise DatevError("no daily close in the selection: nothing to book")
    first, last = min(b.day for b in bookings), max(b.day for b in bookings)
    start, end = span[0] or first, span[1] or last
    year_start = _fiscal_year_start(start, datev.fiscal_year_start)
    if _fiscal_year_start(end, datev.fiscal_year_start) != year_start:
        raise DatevError(f"{start} to {end} spans two fiscal years (beginning "
                         f"{datev.fiscal_year_start}); a DATEV file holds one: export each "
                         "year on its own")
    for b in bookings:
        check_booking(b, datev.account_length)
    seen = Transliteration()
    now = now or datetime.now()
    header = [
        '"EXTF"', "700", "21", '"Buchungsstapel"', "13", now.strftime("%Y%m%d%H%M%S%f")[:17],
        "", '"RE"', '"pos-etl"', '""', str(datev.consultant_number),
        str(datev.client_number), year_start.strftime("%Y%m%d"), str(datev.account_length),
        start.strftime("%Y%m%d"), end.strftime("%Y%m%d"), '"Kassenabschluss pos-etl"', '""',
        "1", "0", "0", '"EUR"', "", '""', "", "", "", "", "", '""', '""',
    ]
    lines = [";".join(header), ";".join(DATEV_COLUMNS)]
    empty = [""] * (len(DATEV_COLUMNS) - 14)
    for b in bookings:
        # text fields quoted, numbers and accounts bare, as DATEV's own exports write them
        record = [f"{abs(b.amount):.2f}".replace(".", ","),
                  text_field("S" if b.amount > 0 else "H"), text_field("EUR"), "", "", "",
                  b.account, b.counter, "", b.day.strftime("%d%m"), text_field(b.document),
                  "", "", text_field(b.text, seen, TEXT_LENGTH), *empty]
        assert len(record) == len(DATEV_COLUMNS)
        lines.append(";".join(record))
    target.write_bytes(("\r\n".join(lines) + "\r\n").encode(ENCODING))
    return len(bookings), seen


def read_datev(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """A Buchungsstapel read back: the header fields and the bookings by column name."""
    text = path.read_bytes().decode(ENCODING)
    lines = text.split("\r\n")
    header = next(csv.reader([lines[0]], delimiter=";"))
    rows = list(csv.DictReader(io.StringIO("\r\n".join(lines[1:]), newline=""),
                               delimiter=";"))
    return header, rows
