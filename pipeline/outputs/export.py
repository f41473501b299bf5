"""``pos-etl export``: a report or mart of the warehouse, for a date range and locations, as
CSV, Excel (.xlsx), Parquet, or the daily closes as bookings: DATEV Buchungsstapel (EXTF
700) or BMD NTCS import files, one per booking period.

Amounts stay exact in every format: CSV and Parquet come from DuckDB's own writers (DECIMAL
columns as decimal text and as Parquet DECIMAL), Excel cells get the decimal values with a
two-place number format, DATEV amounts are written from ``Decimal`` with a decimal comma.

``locale`` ``de`` (``--locale de``, or ``[export] locale``) writes for German-speaking
readers: CSV with ``;`` between fields, a decimal comma, WAHR/FALSCH, German headers and a
byte order mark (so Excel reads UTF-8); xlsx with German headers. The headers are the
dictionary's labels (``dbt_like_sql/columns.yml``, ``labels.de``). Every xlsx names each
location (short code and name beside ``location_id``), has a totals row (``SUBTOTAL``, so
it follows the autofilter), an autofilter and a frozen header.

POS text cannot be turned against the reader (``pipeline.core.untrusted``): a CSV field a
spreadsheet would run as a formula is prefixed with ``'`` unless ``raw_text`` is asked
for (machine consumers); xlsx cells from data are strings, never formulas, with the
control characters Excel rejects replaced; DATEV fields are checked (``pipeline.accounting.datev``).

The file is written in a private folder beside the target (the xlsx writer's scratch
files too), moved into place when whole and the folder removed on every way out; one a
killed export left is removed by the next export to that folder. A target that is a
symlink is written through to the file it points to. Booking files go into a folder (or a
``.zip``), one file per booking period, each moved into place when whole; a single
period may be written to a file of its own name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb

from pipeline.accounting import ledger
from pipeline.accounting.bookfiles import export_bookings
from pipeline.accounting.formats import BOOKING_FORMATS
from pipeline.core.settings import Settings
from pipeline.core.untrusted import for_excel
from pipeline.outputs import TABLE_FORMATS
from pipeline.warehouse.coverage import Gaps, gaps, warehouse_days
from pipeline.warehouse.selection import (
    Exported,
    ExportError,
    Layout,
    Selection,
    check_warehouse,
    real_target,
    remove_leftovers,
    resolve_model,
    selection_query,
)

FORMATS = (*TABLE_FORMATS, *BOOKING_FORMATS)
def export(settings: Settings, sel: Selection, fmt: str, output: Path, *,
           raw_text: bool = False, locale: str | None = None) -> Exported:
    """Write the selection to ``output`` (replaced atomically). ``raw_text`` keeps CSV
    text fields byte for byte (no formula prefix), for machine consumers. ``locale``
    (default ``[export] locale``) says how CSV and xlsx speak (``Layout``). The booking
    formats write one file per booking period into the folder (or ``.zip``) ``output``."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    layout = Layout.of(settings, locale)
    check_warehouse(settings)
    missing = missing_dates(settings, sel)
    over = settings.last_date_over(datetime.now(UTC))
    under_way = sel.end is not None and sel.end > over
    if fmt in BOOKING_FORMATS and sel.start is not None and sel.start > over:
        raise ExportError(f"{sel.start} .. {sel.end}: no business date of the range is over "
                          f"yet (the last one is {over}): nothing to book")
    if fmt in BOOKING_FORMATS:  # nothing the till has not finished is booked
        result = export_bookings(settings, dataclasses.replace(
            sel, end=over if sel.end is None or under_way else sel.end), fmt, output)
    else:
        target = real_target(output)
        remove_leftovers(target.parent, target.name)
        scratch = target.with_name(f".{target.name}.{os.getpid()}.export")
        scratch.mkdir()
        try:
            temp = scratch / target.name
            result = _write(settings, sel, fmt, temp, scratch, raw_text, missing, layout)
            os.replace(temp, target)
            result.files = [target]
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    result.missing = missing
    result.warnings[:0] = [f"{sel.model} lacks business dates of the range: {g.line()}"
                           for g in missing]
    if under_way:
        first = max(over + timedelta(days=1), sel.start or over)
        result.warnings.insert(0, f"the range reaches past the last business date that is "
                                  f"over, {over}: {first} .. {sel.end} "
                                  f"{'are' if sel.end > first else 'is'} not over yet"
                                  + (", not booked" if fmt in BOOKING_FORMATS else ""))
    result.warnings += closed_changes(settings, sel)
    return result


def closed_changes(settings: Settings, sel: Selection) -> list[str]:
    """A warning per closed booking period the selection reaches into whose days changed
    since the close and whose corrections the first open period has not booked yet: its
    correction bookings (``rpt_period_corrections``) and the correction rows of the cash
    book and VAT report (``ledger.pending_report_corrections``)."""
    start, end = sel.start or date.min, sel.end or date.max
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        try:
            rows = con.execute("""
                select p.period, p.closed_at,
                       (select count(distinct (c.location_id, c.original_date))
                        from rpt_period_corrections c where c.closed_period = p.period)
                from rpt_closed_periods p
                where p.first_date <= ? and p.last_date >= ?
                order by p.first_date""", [end, start]).fetchall()
        except duckdb.Error:  # a warehouse built before the close's tables
            return []
        reports = ledger.pending_report_corrections(con)
    return [f"the closed period {period} (closed {closed_at:%Y-%m-%d %H:%M} UTC): its "
            f"reports and booking file are as closed; changed since: correction bookings "
            f"for {dates} date(s) (rpt_period_corrections) and {reports.get(period, 0)} "
            "correction row(s) of the cash book and VAT report (corrects_date), pending in "
            "the first open period (rpt_period_changes lists every change)"
            for period, closed_at, dates in rows if dates or reports.get(period)]


def missing_dates(settings: Settings, sel: Selection) -> list[Gaps]:
    """Per location of the selection, the business dates of its range that the warehouse
    lacks (``pipeline.warehouse.coverage``): for a model of locations and business dates."""
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        columns = {name for name, _ in resolve_model(con, sel.model)[1]}
    if not {"location_id", "business_date"} <= columns:
        return []
    return [g for g in gaps(settings, warehouse_days(settings.warehouse.warehouse_path),
                            datetime.now(UTC), sel.start, sel.end, sel.location_ids)
            if g.missing]


def _write(settings: Settings, sel: Selection, fmt: str, temp: Path, scratch: Path,
           raw_text: bool, missing: list[Gaps], layout: Layout) -> Exported:
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        if fmt == "xlsx":
            sql = selection_query(con, sel)
            return Exported(_write_xlsx(con.execute(sql), temp, scratch, sel.model, missing,
                                        layout))
        if fmt == "parquet":
            sql, options = selection_query(con, sel), "format parquet"
        else:
            german = layout.locale == "de"
            sql = selection_query(con, sel, neutralise=not raw_text,
                                  layout=layout if german else None, as_text=german)
            options = "format csv, header" + (", delimiter ';'" if german else "")
        path = str(temp).replace("'", "''")  # DuckDB's own writer, streaming
        rows = con.execute(f"copy ({sql}) to '{path}' ({options})").fetchone()[0]
    if fmt == "csv" and layout.locale == "de":
        _prepend_bom(temp)
    return Exported(rows)


def _prepend_bom(path: Path) -> None:
    """UTF-8's byte order mark before the file, which Excel needs to read it as UTF-8
    (without it, German Excel reads Windows-1252: ``GeschÃ¤ftstag``)."""
    marked = path.with_name(path.name + ".bom")
    with open(path, "rb") as src, open(marked, "wb") as dst:
        dst.write(b"\xef\xbb\xbf")
        shutil.copyfileobj(src, dst, 1 << 20)
    os.replace(marked, path)


XLSX_MAX_ROWS = 1_048_575
"""Rows of a worksheet below its header: Excel's limit."""


def _summable(name: str, kinds: set[type]) -> bool:
    """A column the totals row adds up: amounts and counts, not prices, rates or ids."""
    if any(word in name for word in ("price", "percent", "nutrition", "latitude", "longitude",
                                      "_id", "_nr", "number", "position", "capacity", "age")):
        return False
    if name in ("location_id", "min_amount", "max_amount", "free_amount", "course", "badge"):
        return False
    return bool(kinds) and kinds <= {Decimal, int}


def _write_xlsx(cursor, target: Path, scratch: Path, sheet: str,
                missing: list[Gaps], layout: Layout) -> int:
    """XlsxWriter in constant-memory mode, its scratch files in ``scratch``. Strings are
    written as strings (``strings_to_formulas``, ``_urls`` and ``_numbers`` off). Headers
    in the layout's locale, each location's short code and name beside ``location_id``,
    a totals row of ``SUBTOTAL(109, ...)`` (it follows the autofilter; the file carries its
    value for readers that do not compute), an autofilter and a frozen header. The business
    dates the range lacks, if any, on a sheet of their own, one row per location and run of
    missing dates."""
    import xlsxwriter

    options = {"constant_memory": True, "tmpdir": str(scratch),
               "strings_to_formulas": False, "strings_to_urls": False,
               "strings_to_numbers": False, "remove_timezone": True}
    names = [d[0] for d in cursor.description]
    where = names.index("location_id") + 1 if "location_id" in names else None
    if where is not None:  # the location's short code and name beside its id
        names[where:where] = [layout.word("short_code"), layout.word("name")]
    with contextlib.closing(xlsxwriter.Workbook(str(target), options)) as book:
        ws = book.add_worksheet(_sheet_name(sheet))
        formats = {"bold": book.add_format({"bold": True}),
                   "money": book.add_format({"num_format": "#,##0.00"}),
                   "decimal": book.add_format({"num_format": "0.00######"}),
                   "date": book.add_format({"num_format": "yyyy-mm-dd"}),
                   "datetime": book.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"}),
                   "total": book.add_format({"bold": True, "num_format": "#,##0.00",
                                             "top": 1}),
                   "total_count": book.add_format({"bold": True, "top": 1})}
        for col, name in enumerate(names):
            header = layout.header(name)
            ws.write_string(0, col, for_excel(header), formats["bold"])
            ws.set_column(col, col, min(max(len(header) + 2, 10), 40))
        ws.freeze_panes(1, 0)
        rows = 0
        sums: list = [0] * len(names)
        kinds: list[set[type]] = [set() for _ in names]
        while batch := cursor.fetchmany(10_000):
            if rows + len(batch) > XLSX_MAX_ROWS - 1:  # the totals row needs one
                raise ExportError(f"{sheet}: more than {XLSX_MAX_ROWS - 1:,} rows, Excel's "
                                  "limit; narrow --start/--end or --location, or export "
                                  "csv or parquet")
            for row in batch:
                rows += 1
                if where is not None:
                    code, name = layout.locations.get(row[where - 1], ("", ""))
                    row = (*row[:where], code, name, *row[where:])
                for col, value in enumerate(row):
                    _xlsx_cell(ws, rows, col, value, formats)
                    if value is not None:
                        kinds[col].add(type(value))
                        if type(value) in (Decimal, int):
                            sums[col] += value
        if rows:
            ws.autofilter(0, 0, rows, len(names) - 1)
            ws.write_string(rows + 1, 0, layout.word("total"), formats["total_count"])
            for col, total in enumerate(sums):
                if col == 0 or not _summable(names[col], kinds[col]):
                    continue
                cells = xlsxwriter.utility.xl_range(1, col, rows, col)
                ws.write_formula(rows + 1, col, f"=SUBTOTAL(109,{cells})",
                                 formats["total" if isinstance(total, Decimal)
                                         else "total_count"], total)
        if missing:
            gaps_ws = book.add_worksheet(layout.word("missing"))
            for col, title in enumerate(layout.word("gaps")):
                gaps_ws.write_string(0, col, title, formats["bold"])
            line = 0
            for g in missing:
                for first, last in g.ranges:
                    line += 1
                    for col, value in enumerate((g.location_id, g.short_code, first, last,
                                                 (last - first).days + 1, g.expected)):
                        _xlsx_cell(gaps_ws, line, col, value, formats)
    return rows


def _sheet_name(name: str) -> str:
    return re.sub(r"[\[\]:*?/\\]", "_", name)[:31]


def _xlsx_cell(ws, row: int, col: int, value, formats: dict) -> None:
    """A cell: amounts with two decimals shown, dates as dates, text always as text."""
    if value is None:
        return
    if isinstance(value, bool):
        ws.write_boolean(row, col, value)
    elif isinstance(value, Decimal):
        ws.write_number(row, col, value, formats["money" if value.as_tuple().exponent >= -2
                                                 else "decimal"])
    elif isinstance(value, int | float):
        ws.write_number(row, col, value)
    elif isinstance(value, datetime):  # Excel has no time zones: the UTC wall clock
        utc = value.astimezone(UTC) if value.tzinfo else value
        ws.write_datetime(row, col, utc.replace(tzinfo=None), formats["datetime"])
    elif isinstance(value, date):
        ws.write_datetime(row, col, value, formats["date"])
    else:
        ws.write_string(row, col, for_excel(str(value)))


def parse_locations(settings: Settings, refs: Iterable[str] | None) -> list[int] | None:
    return [settings.location(ref).id for ref in refs] if refs else None
