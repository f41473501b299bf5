"""``pos-etl export``: a report or mart of the warehouse, for a date range and locations, as
CSV, Excel (.xlsx), Parquet, or a DATEV Buchungsstapel (EXTF 700) of the daily closes.

Amounts stay exact in every format: CSV and Parquet come from DuckDB's own writers (DECIMAL
columns as decimal text and as Parquet DECIMAL), Excel cells get the decimal values with a
two-place number format, DATEV amounts are written from ``Decimal`` with a decimal comma.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from pipeline.money import cents
from pipeline.settings import DatevSettings, Settings

FORMATS = ("csv", "xlsx", "parquet", "datev")


class ExportError(Exception):
    """The export cannot be made as asked; the message says what to change."""


@dataclass(frozen=True)
class Selection:
    model: str
    start: date | None
    end: date | None
    location_ids: list[int] | None


def _resolve(con: duckdb.DuckDBPyConnection, model: str) -> tuple[str, list[str]]:
    """The model's qualified name (marts and reports in ``main``, staging models in
    ``staging``; ``staging.<model>`` is accepted too) and its columns."""
    schema, _, name = model.rpartition(".")
    for where in ([schema] if schema else ["main", "staging"]):
        found = con.execute("select column_name from information_schema.columns "
                            "where table_schema = ? and table_name = ? "
                            "order by ordinal_position", [where, name]).fetchall()
        if found:
            return f'{where}."{name}"', [r[0] for r in found]
    models = [r[0] for r in con.execute(
        "select table_name from information_schema.tables "
        "where table_schema in ('main', 'staging') order by 1").fetchall()]
    raise ExportError(f"the warehouse has no model {model!r}; models: {', '.join(models)}")


def _query(con: duckdb.DuckDBPyConnection, sel: Selection) -> tuple[str, list]:
    """The select of the model's rows in the selection, and its parameters."""
    table, columns = _resolve(con, sel.model)
    where, params = [], []
    if sel.start or sel.end:
        date_column = next((c for c in ("business_date", "snapshot_date") if c in columns), None)
        if date_column is None:
            raise ExportError(f"{sel.model} has no business_date or snapshot_date column: "
                              "export it without --start/--end")
        if sel.start:
            where.append(f"{date_column} >= ?")
            params.append(sel.start)
        if sel.end:
            where.append(f"{date_column} <= ?")
            params.append(sel.end)
    if sel.location_ids:
        if "location_id" not in columns:
            raise ExportError(f"{sel.model} has no location_id column (it is tenant-wide): "
                              "export it without --location")
        where.append(f"location_id in ({', '.join('?' for _ in sel.location_ids)})")
        params.extend(sel.location_ids)
    keys = [c for c in ("location_id", "business_date", "snapshot_date") if c in columns]
    sql = (f"select * from {table}"
           + (f" where {' and '.join(where)}" if where else "")
           + (f" order by {', '.join(keys)}" if keys else ""))
    return sql, params


def _atomic_target(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def export(settings: Settings, sel: Selection, fmt: str, output: Path) -> int:
    """Write the selection to ``output`` (replaced atomically); returns the rows written
    (the bookings, for DATEV)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    path = settings.warehouse.warehouse_path
    if not path.exists():
        raise ExportError(f"no warehouse at {path}: run `pos-etl load` (or `pos-etl build`) "
                          "first")
    temp = _atomic_target(output)
    try:
        with duckdb.connect(str(path), read_only=True) as con:
            if fmt == "datev":
                if sel.model != "rpt_daily_close":
                    raise ExportError("a DATEV file is made of the daily closes: export "
                                      "rpt_daily_close")
                rows = write_datev(con, sel, settings.accounting.datev, temp,
                                   {loc.id: loc.short_code for loc in settings.locations})
            else:
                sql, params = _query(con, sel)
                if fmt == "xlsx":
                    rows = _write_xlsx(con.execute(sql, params), temp, sel.model)
                else:
                    options = "format parquet" if fmt == "parquet" else "format csv, header"
                    rows = _copy(con, sql, params, temp, options)
        os.replace(temp, output)
    finally:
        temp.unlink(missing_ok=True)
    return rows


def _copy(con, sql: str, params: list, target: Path, options: str) -> int:
    """DuckDB's own writer, streaming the selection. COPY takes no parameters, so the
    selection's values (dates and integer ids, typed by ``Selection``) are written into
    the statement as literals."""
    literal = sql
    for value in params:
        literal = literal.replace("?", f"DATE '{value.isoformat()}'" if isinstance(value, date)
                                  else str(int(value)), 1)
    path = str(target).replace("'", "''")
    return con.execute(f"copy ({literal}) to '{path}' ({options})").fetchone()[0]


XLSX_MAX_ROWS = 1_048_575
"""Rows of a worksheet below its header: Excel's limit."""


def _write_xlsx(cursor, target: Path, sheet: str) -> int:
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    book = Workbook(write_only=True)
    ws = book.create_sheet(sheet[:31])
    ws.freeze_panes = "A2"
    header = []
    for d in cursor.description:
        cell = WriteOnlyCell(ws, value=d[0])
        cell.font = Font(bold=True)
        header.append(cell)
    ws.append(header)
    rows = 0
    while batch := cursor.fetchmany(10_000):
        rows += len(batch)
        if rows > XLSX_MAX_ROWS:
            raise ExportError(f"{sheet}: more than {XLSX_MAX_ROWS:,} rows, Excel's limit; "
                              "narrow --start/--end or --location, or export csv or parquet")
        for row in batch:
            ws.append([_xlsx_cell(ws, v, WriteOnlyCell) for v in row])
    book.save(target)
    return rows


def _xlsx_cell(ws, value, cell_type):
    """A cell: amounts with two decimals shown, dates as dates, the rest as they are."""
    if isinstance(value, Decimal):
        cell = cell_type(ws, value=value)
        cell.number_format = "#,##0.00" if value.as_tuple().exponent >= -2 else "0.00######"
        return cell
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.replace(tzinfo=None)  # Excel has no time zones: the UTC wall clock
    if isinstance(value, (list, dict)):
        return str(value)
    return value


# --- DATEV ---------------------------------------------------------------------------------

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


@dataclass(frozen=True)
class Booking:
    """One line of the Buchungsstapel: ``amount`` debited to ``account`` and credited to
    ``counter`` (a negative amount is written as the opposite side)."""

    amount: Decimal
    account: str
    counter: str
    day: date
    document: str
    text: str


def _fiscal_year_start(day: date, start: str) -> date:
    month, dom = (int(x) for x in start.split("-"))
    begin = date(day.year, month, dom)
    return begin if begin <= day else date(day.year - 1, month, dom)


def daily_close_bookings(con: duckdb.DuckDBPyConnection, sel: Selection,
                         datev: DatevSettings, short_codes: dict[int, str]) -> list[Booking]:
    """The bookings of each daily close in the selection, through the clearing account:
    revenue per tax rate, tips and each non-revenue payment group are credited to their
    accounts; each payment type's payments are debited to its ``fibuAccountNr``; a day's
    difference goes to the suspense account. Per day the clearing account nets to 0."""
    close_sql, params = _query(con, Selection("rpt_daily_close", sel.start, sel.end,
                                              sel.location_ids))
    days = con.execute(f"select location_id, business_date, tip_amount, difference_amount "
                       f"from ({close_sql})", params).fetchall()
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

        def book(amount, account, counter, text, day=day, doc=doc):
            if amount:
                out.append(Booking(cents(amount), account, counter, day, doc, text[:60]))

        for rate, amount in revenue.get((loc, day), []):
            account = datev.revenue_accounts.get(_rate_key(rate))
            if account is None:
                raise ExportError(
                    f"location {loc}, business date {day}: no revenue account for tax rate "
                    f"{_rate_key(rate)} %; add it to [accounting.datev] revenue_accounts")
            book(amount, clearing, account, f"Erlöse {_rate_key(rate)} % {code}")
        book(tips, clearing, datev.tip_account, f"Trinkgeld {code}")
        for group, amount in groups.get((loc, day), []):
            account = datev.non_revenue_accounts.get(group, datev.suspense_account)
            book(amount, clearing, account, f"{group or 'ohne Zahlungsgruppe'} {code}")
        for name, fibu, amount in payments.get((loc, day), []):
            book(amount, fibu or datev.cash_account, clearing, f"{name} {code}")
        book(difference, clearing, datev.suspense_account, f"Kassendifferenz {code}")
    return out


def _rate_key(rate: Decimal) -> str:
    text = format(Decimal(rate).normalize(), "f")
    return text


def write_datev(con: duckdb.DuckDBPyConnection, sel: Selection, datev: DatevSettings,
                target: Path, short_codes: dict[int, str],
                now: datetime | None = None) -> int:
    """A Buchungsstapel (EXTF 700, format version 13) of the daily closes in the selection.

    One file holds one fiscal year (DATEV's rule), so the range must lie within one."""
    bookings = daily_close_bookings(con, sel, datev, short_codes)
    if not bookings:
        raise ExportError("no daily close in the selection: nothing to book")
    first, last = min(b.day for b in bookings), max(b.day for b in bookings)
    start, end = sel.start or first, sel.end or last
    year_start = _fiscal_year_start(start, datev.fiscal_year_start)
    if _fiscal_year_start(end, datev.fiscal_year_start) != year_start:
        raise ExportError(f"{start} to {end} spans two fiscal years (beginning "
                          f"{datev.fiscal_year_start}); a DATEV file holds one: export each "
                          "year on its own")
    for b in bookings:
        for account in (b.account, b.counter):
            if len(account) > datev.account_length + 1:  # + 1: personal accounts
                raise ExportError(f"account {account} ({b.text}, {b.day}) is longer than "
                                  f"account_length {datev.account_length}")
    now = now or datetime.now()
    header = [
        '"EXTF"', "700", "21", '"Buchungsstapel"', "13", now.strftime("%Y%m%d%H%M%S%f")[:17],
        "", '"RE"', '"pos-etl"', '""', str(datev.consultant_number),
        str(datev.client_number), year_start.strftime("%Y%m%d"), str(datev.account_length),
        start.strftime("%Y%m%d"), end.strftime("%Y%m%d"), '"Kassenabschluss pos-etl"', '""',
        "1", "0", "0", '"EUR"', "", '""', "", "", "", "", "", '""', '""',
    ]
    lines = [";".join(header), ";".join(DATEV_COLUMNS)]
    empty = ";" * (len(DATEV_COLUMNS) - 14)
    for b in bookings:
        # text fields quoted, numbers and accounts bare, as DATEV's own exports write them
        lines.append(";".join((
            f"{abs(b.amount):.2f}".replace(".", ","), _text("S" if b.amount > 0 else "H"),
            _text("EUR"), "", "", "", b.account, b.counter, "", b.day.strftime("%d%m"),
            _text(b.document), "", "", _text(b.text))) + empty)
    buf = io.StringIO()
    buf.write("\r\n".join(lines) + "\r\n")
    target.write_bytes(buf.getvalue().encode(ENCODING, errors="replace"))
    return len(bookings)


def _text(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


def read_datev(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """A Buchungsstapel read back: the header fields and the bookings by column name."""
    text = path.read_bytes().decode(ENCODING)
    lines = text.split("\r\n")
    header = next(csv.reader([lines[0]], delimiter=";"))
    rows = list(csv.DictReader(io.StringIO("\r\n".join(lines[1:]), newline=""),
                               delimiter=";"))
    return header, rows


def parse_locations(settings: Settings, refs: Iterable[str] | None) -> list[int] | None:
    return [settings.location(ref).id for ref in refs] if refs else None
