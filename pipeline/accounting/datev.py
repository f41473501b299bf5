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
)
from pipeline.core.accounting_settings import DatevSettings
from pipeline.core.settings import Settings

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

TEXT_LENGTH = 60
"""Characters of a Buchungstext."""
MAX_AMOUNT = Decimal("9999999999.99")
"""The largest Umsatz DATEV takes (ten digits before the comma)."""
_ACCOUNT = re.compile(r"[0-9]+")


def check_booking(b: Booking, account_length: int) -> None:
    """Raise ``BookingError`` unless the booking's accounts and amount fit DATEV's fields:
    accounts digits only, at most ``account_length`` + 1 of them (personal accounts),
    the amount at most ten digits before the comma."""
    for name, account in (("account", b.account), ("counter account", b.counter)):
        if not _ACCOUNT.fullmatch(account) or len(account) > account_length + 1:
            raise BookingError(f"{b.where}: {name} {account!r} is not a DATEV account (digits "
                             f"only, at most {account_length + 1}: account_length "
                             f"{account_length} + 1 for personal accounts); correct the "
                             "payment type's fibuAccountNr in the POS or the account in "
                             "[accounting.accounts]")
    if abs(b.amount) > MAX_AMOUNT:
        raise BookingError(f"{b.where}: amount {b.amount} is beyond DATEV's ten digits")


def text_field(value: str, seen: Transliteration | None = None,
               length: int | None = None) -> str:
    """A DATEV text field: ``ansi_text`` (no control characters, Windows-1252), cut to
    ``length``, quoted with inner quotes doubled."""
    text = ansi_text(value, seen)
    if length is not None:
        text = text[:length]
    return '"' + text.replace('"', '""') + '"'


def write_datev(bookings: list[Booking], period: Period, span: tuple[date, date],
                datev: DatevSettings, target: Path,
                now: datetime | None = None, incomplete: bool = False, *,
                locked: bool = False, chart: str = "") -> Transliteration:
    """One Buchungsstapel: the ``bookings`` of one booking ``period`` (a file holds one
    fiscal year; DATEV takes one batch per period), ``span`` the dates its header names,
    its description (at most 30 characters) ``unvollständig`` when business dates of the
    period are missing; ``locked`` sets Festschreibung (a closed period's), ``chart`` the
    Sachkontenrahmen (``03``, ``04``). Returns what was transliterated."""
    for b in bookings:
        check_booking(b, datev.account_length)
    seen = Transliteration()
    now = now or datetime.now()
    start, end = span
    header = [
        '"EXTF"', "700", "21", '"Buchungsstapel"', "13", now.strftime("%Y%m%d%H%M%S%f")[:17],
        "", '"RE"', '"pos-etl"', '""', str(datev.consultant_number),
        str(datev.client_number), period.year_start.strftime("%Y%m%d"),
        str(datev.account_length), start.strftime("%Y%m%d"), end.strftime("%Y%m%d"),
        text_field(f"Kasse {period.name} unvollständig" if incomplete
                   else f"Kassenabschluss {period.name}"), '""', "1", "0",
        "1" if locked else "0", '"EUR"', "", '""', "", "", chart, "", "", '""', '""',
    ]
    lines = [";".join(header), ";".join(DATEV_COLUMNS)]
    kost1 = DATEV_COLUMNS.index("KOST1 - Kostenstelle")
    for b in bookings:
        record = [""] * len(DATEV_COLUMNS)
        # text fields quoted, numbers and accounts bare, as DATEV's own exports write them
        record[:14] = [f"{abs(b.amount):.2f}".replace(".", ","),
                       text_field("S" if b.amount > 0 else "H"), text_field("EUR"), "", "",
                       "", b.account, b.counter, "", b.day.strftime("%d%m"),
                       text_field(b.document), "", "", text_field(b.text, seen, TEXT_LENGTH)]
        if b.cost_center:
            record[kost1] = text_field(b.cost_center)
        lines.append(";".join(record))
    target.write_bytes(("\r\n".join(lines) + "\r\n").encode(ENCODING))
    return seen


def read_datev(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """A Buchungsstapel read back: the header fields and the bookings by column name."""
    text = path.read_bytes().decode(ENCODING)
    lines = text.split("\r\n")
    header = next(csv.reader([lines[0]], delimiter=";"))
    rows = list(csv.DictReader(io.StringIO("\r\n".join(lines[1:]), newline=""),
                               delimiter=";"))
    return header, rows


PLACEHOLDERS = ("[accounting.datev] consultant_number and client_number are the placeholders "
                "1001 and 1, not your tax advisor's Berater and Mandant (DATEV rejects a batch "
                "whose numbers are not the client's): set them")


def _write(settings: Settings, bookings: list[Booking], period: Period,
           span: tuple[date, date], target: Path, now: datetime | None, incomplete: bool,
           locked: bool) -> Transliteration:
    datev = settings.accounting.datev
    return write_datev(bookings, period, span, datev, target, now, incomplete,
                       locked=locked and datev.lock_closed_periods,
                       chart=settings.accounting.chart_of_accounts.datev_chart)


FORMAT = BookingFormat(
    "datev", "DATEV", "EXTF_Buchungsstapel_{}.csv", _write,
    lambda settings: PLACEHOLDERS if settings.accounting.datev.has_placeholders else None)
"""DATEV's Buchungsstapel (EXTF 700), one per booking period."""
