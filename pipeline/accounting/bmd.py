"""The bookings (daily closes, the bank's side) as a BMD NTCS booking import
(``Buchungen importieren``, CSV).

One line per booking, with the field names BMD's import reads in the first line:
``satzart;konto;gkonto;belegnr;belegdatum;buchsymbol;buchcode;prozent;steuercode;betrag;
steuer;text;kost;extbelegnr``. What it assumes (``docs/accounting.md``):

- ``satzart`` 0 (a financial booking); ``konto`` is debited and ``gkonto`` credited, so
  ``buchcode`` is 1 (Soll on ``konto``) on every line; a reversal (a day whose revenue
  or payments are negative) keeps its accounts and is a negative ``betrag``.
- ``betrag`` is gross; a revenue line carries its tax rate (``prozent``), the
  ``steuercode`` of domestic VAT and the tax included (``steuer``), negative as BMD
  shows tax on revenue (positive on a reversal); other lines carry no tax.
- ``belegnr`` is the business date as ``YYYYMMDD`` followed by the location id (digits,
  one number per location's daily close; a correction's, the bank's and the cash moved
  to the bank's led by 7, 9 and 8), ``extbelegnr`` the document
  (``Z<location>-<YYYYMMDD>``), ``belegdatum`` the date booked as ``DD.MM.YYYY``,
  ``buchsymbol`` ``[accounting.bmd] buchsymbol`` (``KA``), the bank's entries'
  ``bank_buchsymbol`` (``BK``), ``kost`` the location's cost centre (digits).
- Windows-1252, ``;``, CRLF, a decimal comma; text without control characters,
  transliterated where Windows-1252 has no character, quoted where it holds ``;`` or ``"``.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

from pipeline.accounting.bookings import (
    ENCODING,
    Booking,
    BookingError,
    BookingFormat,
    Period,
    Transliteration,
    ansi_text,
    rate_key,
)
from pipeline.core.accounting_settings import BmdSettings
from pipeline.core.settings import Settings

BMD_COLUMNS = ("satzart", "konto", "gkonto", "belegnr", "belegdatum", "buchsymbol",
               "buchcode", "prozent", "steuercode", "betrag", "steuer", "text", "kost",
               "extbelegnr")
TEXT_LENGTH = 255
_DIGITS = re.compile(r"[0-9]{1,9}")
"""What BMD takes as an account and as a cost centre."""


def _decimal(value: Decimal) -> str:
    return f"{value:.2f}".replace(".", ",")


def check_booking(b: Booking) -> None:
    """Raise ``BookingError`` unless the booking fits BMD's fields: accounts and the cost
    centre digits."""
    for name, account in (("konto", b.account), ("gkonto", b.counter)):
        if not _DIGITS.fullmatch(account):
            raise BookingError(f"{b.where}: {name} {account!r} is not a BMD account (1 to 9 "
                               "digits); correct the payment type's fibuAccountNr in the "
                               "POS or the account in [accounting.accounts]")
    if b.cost_center and not _DIGITS.fullmatch(b.cost_center):
        raise BookingError(f"location {b.location_id}: cost_center {b.cost_center!r} is not "
                           "a BMD cost centre (1 to 9 digits)")


DOCUMENT_DIGIT = {"Z": "", "K": "7", "G": "8", "B": "9"}
"""The digit a ``belegnr`` starts with, per kind of document (a daily close's none: it
starts with its year)."""
_DOCUMENT = re.compile(r"(?P<kind>[A-Z])(?P<loc>\d+)-(?P<day>\d{8})")


def document_number(b: Booking) -> str:
    """``belegnr``: digits, one number per document as DATEV's Belegfeld 1: a daily close's
    is its business date and the location (``YYYYMMDD`` then the location id; 12 digits
    for a four-digit id, within BMD's 20); a correction's (``K``), the cash moved to the
    bank's (``G``) and the bank's entries of a day (``B``) the same, led by 7, 8 and 9, so
    none is another's and none is a daily close's (whose first digit is its year's)."""
    match = _DOCUMENT.fullmatch(b.document)
    if match is None or match["kind"] not in DOCUMENT_DIGIT:
        return f"{b.day:%Y%m%d}{b.location_id}"
    return f"{DOCUMENT_DIGIT[match['kind']]}{match['day']}{match['loc']}"


def write_bmd(bookings: list[Booking], bmd: BmdSettings, target: Path) -> Transliteration:
    """The ``bookings`` (of one booking period) as BMD's import file; returns what was
    transliterated."""
    for b in bookings:
        check_booking(b)
    seen = Transliteration()
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter=";", lineterminator="\r\n")
    writer.writerow(BMD_COLUMNS)
    for b in bookings:
        taxed = b.tax_rate is not None
        writer.writerow([
            "0", b.account, b.counter, document_number(b), b.day.strftime("%d.%m.%Y"),
            bmd.bank_buchsymbol if b.document.startswith("B") else bmd.buchsymbol, "1",
            rate_key(b.tax_rate).replace(".", ",") if taxed else "",
            bmd.tax_code if taxed else "", _decimal(b.amount),
            _decimal(-(b.tax or 0)) if taxed else "",
            ansi_text(b.text, seen)[:TEXT_LENGTH], b.cost_center or "", b.document])
    target.write_bytes(out.getvalue().encode(ENCODING))
    return seen


def _write(settings: Settings, bookings: list[Booking], period: Period,
           span: tuple[date, date], target: Path, now: datetime | None, incomplete: bool,
           locked: bool) -> Transliteration:
    return write_bmd(bookings, settings.accounting.bmd, target)


FORMAT = BookingFormat("bmd", "BMD", "BMD_Buchungen_{}.csv", _write)
"""BMD NTCS's booking import, one file per booking period."""
