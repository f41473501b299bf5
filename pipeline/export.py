"""``pos-etl export``: a report or mart of the warehouse, for a date range and locations, as
CSV, Excel (.xlsx), Parquet, or the daily closes as bookings: DATEV Buchungsstapel (EXTF
700) or BMD NTCS import files, one per booking period.

Amounts stay exact in every format: CSV and Parquet come from DuckDB's own writers (DECIMAL
columns as decimal text and as Parquet DECIMAL), Excel cells get the decimal values with a
two-place number format, DATEV amounts are written from ``Decimal`` with a decimal comma.

POS text cannot be turned against the reader (``pipeline.untrusted``): a CSV field a
spreadsheet would run as a formula is prefixed with ``'`` unless ``raw_text`` is asked
for (machine consumers); xlsx cells from data are strings, never formulas, with the
control characters Excel rejects replaced; DATEV fields are checked (``pipeline.datev``).

The file is written in a private folder beside the target (the xlsx writer's scratch
files too), moved into place when whole and the folder removed on every way out; one a
killed export left is removed by the next export to that folder. A target that is a
symlink is written through to the file it points to. Booking files go into a folder (or a
``.zip``), one file per booking period, each moved into place when whole; a single
period may be written to a file of its own name.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import psutil

from pipeline import ledger
from pipeline.bmd import write_bmd
from pipeline.bookings import (
    Booking,
    BookingError,
    Period,
    by_period,
    check_accounts,
    daily_close_bookings,
    period_of,
)
from pipeline.datev import write_datev
from pipeline.resources import make_lake
from pipeline.settings import Settings
from pipeline.untrusted import for_excel, neutralise_formula_sql

FORMATS = ("csv", "xlsx", "parquet", "datev", "bmd")
BOOKINGS = {"datev": "EXTF_Buchungsstapel_{}.csv", "bmd": "BMD_Buchungen_{}.csv"}
"""The booking formats and the name of the file of one booking period (``2026-11``)."""


class ExportError(Exception):
    """The export cannot be made as asked; the message says what to change."""


@dataclass(frozen=True)
class Selection:
    model: str
    start: date | None
    end: date | None
    location_ids: list[int] | None


@dataclass
class Exported:
    """What an export wrote: rows (the bookings, for DATEV), and what the reader should
    know (characters transliterated, say)."""

    rows: int
    warnings: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


def _resolve(con: duckdb.DuckDBPyConnection, model: str) -> tuple[str, list[tuple[str, str]]]:
    """The model's qualified name (marts and reports in ``main``, staging models in
    ``staging``; ``staging.<model>`` is accepted too) and its columns with their types."""
    schema, _, name = model.rpartition(".")
    for where in ([schema] if schema else ["main", "staging"]):
        found = con.execute("select column_name, data_type from information_schema.columns "
                            "where table_schema = ? and table_name = ? "
                            "order by ordinal_position", [where, name]).fetchall()
        if found:
            return f'{where}."{name}"', found
    models = [r[0] for r in con.execute(
        "select table_name from information_schema.tables "
        "where table_schema in ('main', 'staging') order by 1").fetchall()]
    raise ExportError(f"the warehouse has no model {model!r}; models: {', '.join(models)}")


def _query(con: duckdb.DuckDBPyConnection, sel: Selection, neutralise: bool = False) -> str:
    """The select of the model's rows in the selection; with ``neutralise`` the text
    columns made inert for spreadsheets. The selection's values are typed (dates and
    integer ids) and written as literals, since COPY takes no parameters."""
    table, typed = _resolve(con, sel.model)
    columns = [name for name, _ in typed]
    where = []
    if sel.start or sel.end:
        date_column = next((c for c in ("business_date", "snapshot_date") if c in columns), None)
        if date_column is None:
            raise ExportError(f"{sel.model} has no business_date or snapshot_date column: "
                              "export it without --start/--end")
        if sel.start:
            where.append(f"{date_column} >= DATE '{sel.start.isoformat()}'")
        if sel.end:
            where.append(f"{date_column} <= DATE '{sel.end.isoformat()}'")
    if sel.location_ids:
        if "location_id" not in columns:
            raise ExportError(f"{sel.model} has no location_id column (it is tenant-wide): "
                              "export it without --location")
        where.append(f"location_id in ({', '.join(str(int(x)) for x in sel.location_ids)})")
    keys = [c for c in ("location_id", "business_date", "snapshot_date") if c in columns]
    select = ", ".join(
        f'{neutralise_formula_sql(_quoted(name))} as {_quoted(name)}'
        if neutralise and kind in ("VARCHAR", "JSON") else _quoted(name)
        for name, kind in typed)
    sql = (f"select {select} from {table}"
           + (f" where {' and '.join(where)}" if where else "")
           + (f" order by {', '.join(keys)}" if keys else ""))
    return sql


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


SCRATCH = re.compile(r"^\..+\.(?P<pid>\d+)\.export$")
"""The private folder an export writes in, beside its target: ``.<name>.<pid>.export``."""


def _real_target(output: Path) -> Path:
    """Where the file goes: through a symlink to the file it names; never a folder."""
    target = Path(os.path.realpath(output)) if output.is_symlink() else output
    if target.is_dir():
        raise ExportError(f"{output} is a folder: name the file to write, e.g. "
                          f"{output / 'export.csv'}")
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _remove_leftovers(folder: Path, name: str) -> None:
    """Scratch folders of exports to ``name`` whose process is gone (killed mid-way)."""
    for entry in folder.glob(f".{glob_escape(name)}.*.export"):
        m = SCRATCH.match(entry.name)
        if m and not psutil.pid_exists(int(m["pid"])):
            shutil.rmtree(entry, ignore_errors=True)


def glob_escape(text: str) -> str:
    """``text`` matched literally by ``Path.glob`` (``[``, ``*`` and ``?`` escaped)."""
    return re.sub(r"([\[\]*?])", r"[\1]", text)


def _check_warehouse(settings: Settings) -> None:
    path = settings.warehouse.warehouse_path
    if not path.is_file():
        raise ExportError(f"no warehouse at {path}: run `pos-etl load` (or `pos-etl build`) "
                          "first" if not path.exists() else f"{path} is not a file")


def export(settings: Settings, sel: Selection, fmt: str, output: Path, *,
           raw_text: bool = False) -> Exported:
    """Write the selection to ``output`` (replaced atomically). ``raw_text`` keeps CSV
    text fields byte for byte (no formula prefix), for machine consumers. The booking
    formats write one file per booking period into the folder (or ``.zip``) ``output``."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    _check_warehouse(settings)
    if fmt in BOOKINGS:
        return _export_bookings(settings, sel, fmt, output)
    target = _real_target(output)
    _remove_leftovers(target.parent, target.name)
    scratch = target.with_name(f".{target.name}.{os.getpid()}.export")
    scratch.mkdir()
    try:
        temp = scratch / target.name
        result = _write(settings, sel, fmt, temp, scratch, raw_text)
        os.replace(temp, target)
        result.files = [target]
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _write(settings: Settings, sel: Selection, fmt: str, temp: Path, scratch: Path,
           raw_text: bool) -> Exported:
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        sql = _query(con, sel, neutralise=fmt == "csv" and not raw_text)
        if fmt == "xlsx":
            return Exported(_write_xlsx(con.execute(sql), temp, scratch, sel.model))
        options = "format parquet" if fmt == "parquet" else "format csv, header"
        path = str(temp).replace("'", "''")  # DuckDB's own writer, streaming
        return Exported(con.execute(f"copy ({sql}) to '{path}' ({options})").fetchone()[0])


def _export_bookings(settings: Settings, sel: Selection, fmt: str, output: Path) -> Exported:
    """The daily closes of the selection as booking files, one per booking period, into
    the folder ``output`` (made if missing), into the zip ``output`` (``.zip``), or, for
    a single period, into the file ``output`` (a name with another suffix)."""
    if sel.model != "rpt_daily_close":
        raise ExportError(f"{fmt} bookings are made of the daily closes: export "
                          "rpt_daily_close")
    target = Path(os.path.realpath(output)) if output.is_symlink() else output
    as_zip = target.suffix.lower() == ".zip"
    as_file = not as_zip and target.suffix != "" and not target.is_dir()
    folder = target.parent if as_zip or as_file else target
    folder.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(folder, target.name)
    scratch = folder / f".{target.name}.{os.getpid()}.export"
    scratch.mkdir()
    try:
        written, warnings, rows = _write_bookings(settings, sel, fmt, scratch)
        if as_file and len(written) > 1:
            raise ExportError(
                f"the selection spans {len(written)} booking periods "
                f"({', '.join(p.name for p in written)}), one file each: write them to a "
                f"folder (-o {target.with_suffix('')}/) or a zip (-o "
                f"{target.with_suffix('.zip')})")
        if as_zip:
            with zipfile.ZipFile(scratch / target.name, "w", zipfile.ZIP_DEFLATED) as z:
                for path in written.values():
                    z.write(path, path.name)
            os.replace(scratch / target.name, target)
            files = [target]
        elif as_file:
            os.replace(next(iter(written.values())), target)
            files = [target]
        else:
            files = []
            for path in written.values():  # each file whole, replacing its old version
                os.replace(path, folder / path.name)
                files.append(folder / path.name)
        return Exported(rows, warnings, files)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _write_bookings(settings: Settings, sel: Selection, fmt: str,
                    scratch: Path) -> tuple[dict, list[str], int]:
    """The booking files of each period, written in ``scratch``: {period: file}, the
    warnings, the bookings. A closed period gives the file it was closed with (or, in
    the other format or for part of it, its recorded bookings); the first open period
    carries the corrections of the closed ones (``pipeline.ledger``)."""
    year_start = settings.accounting.datev.fiscal_year_start
    lake = make_lake(settings)
    closed = ledger.closed_periods(lake)
    first_open = ledger.open_period(closed, year_start)
    bookings = _current_bookings(settings, sel, closed, first_open)
    periods = by_period(bookings, year_start)
    for c in closed.values():
        if (sel.start or c.period.first) <= c.period.last and \
                (sel.end or c.period.last) >= c.period.first:
            periods[c.period] = []
    if not any(periods.values()) and not any(p.name in closed for p in periods):
        raise ExportError("no daily close in the selection: nothing to book")
    written, seen, rows = {}, None, 0
    for period in sorted(periods, key=lambda p: p.first):
        path = scratch / BOOKINGS[fmt].format(period.name)
        span = (max(period.first, sel.start or period.first),
                min(period.last, sel.end or period.last))
        items, now = periods[period], None
        if period.name in closed:
            c = closed[period.name]
            if c.format == fmt and span == (period.first, period.last) and not sel.location_ids:
                path.write_bytes(c.content)  # as it was closed, byte for byte
                written[period] = path
                rows += c.bookings
                continue
            items = [b for b in ledger.closed_bookings(lake, c)
                     if span[0] <= b.day <= span[1]
                     and (not sel.location_ids or b.location_id in sel.location_ids)]
            now = c.closed_at
        done = _render(settings, fmt, items, period, span, path, now)
        seen = done if seen is None else seen.merged(done)
        written[period] = path
        rows += len(items)
    warnings = [seen.warning({"datev": "DATEV", "bmd": "BMD"}[fmt])] if seen else []
    return written, warnings, rows


def _current_bookings(settings: Settings, sel: Selection, closed: dict,
                      first_open: Period | None) -> list[Booking]:
    """The selection's bookings as the warehouse has them, and the corrections where the
    selection holds the first open period's first day."""
    locations = {loc.id: loc for loc in settings.locations}
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        try:
            check_accounts(con, settings.accounting.datev)
            ledger.check_current(con, closed)
            bookings = daily_close_bookings(con, _query(con, sel), locations)
            if first_open and (sel.start or first_open.first) <= first_open.first <= \
                    (sel.end or first_open.first):
                bookings += ledger.corrections(con, first_open, sel.location_ids, locations)
        except BookingError as exc:
            raise ExportError(str(exc)) from None
        except duckdb.CatalogException as exc:
            raise ExportError(f"the warehouse was built by an older pos-etl ({exc}): run "
                              "`pos-etl build` first") from None
    return bookings


def _render(settings: Settings, fmt: str, items: list[Booking], period: Period,
            span: tuple[date, date], path: Path, now: datetime | None = None):
    try:
        if fmt == "datev":
            return write_datev(items, period, span, settings.accounting.datev, path, now)
        return write_bmd(items, settings.accounting.bmd, path)
    except BookingError as exc:
        raise ExportError(str(exc)) from None


def close_period(settings: Settings, day: date, fmt: str,
                 today: date | None = None) -> ledger.ClosedPeriod:
    """Close the booking period ``day`` lies in: write its file in ``fmt`` (its daily
    closes and, if earlier periods are closed, their corrections) and commit it with its
    bookings to the lake (``pipeline.ledger``). A build then gives the warehouse the
    closed period; an export of it gives this file."""
    _check_warehouse(settings)
    year_start = settings.accounting.datev.fiscal_year_start
    period = period_of(day, year_start)
    lake = make_lake(settings)
    closed = ledger.closed_periods(lake)
    try:
        ledger.check_closable(period, closed, today or date.today())
    except BookingError as exc:
        raise ExportError(str(exc)) from None
    sel = Selection("rpt_daily_close", period.first, period.last, None)
    bookings = _current_bookings(settings, sel, closed, ledger.open_period(closed, year_start))
    name = BOOKINGS[fmt].format(period.name)
    closed_at = datetime.now(UTC)
    with tempfile.TemporaryDirectory(dir=settings.warehouse.data_dir) as tmp:
        path = Path(tmp) / name
        _render(settings, fmt, bookings, period, (period.first, period.last), path, closed_at)
        content = path.read_bytes()
    return ledger.record(lake, period, fmt, name, content, bookings, closed_at)


XLSX_MAX_ROWS = 1_048_575
"""Rows of a worksheet below its header: Excel's limit."""


def _write_xlsx(cursor, target: Path, scratch: Path, sheet: str) -> int:
    """XlsxWriter in constant-memory mode, its scratch files in ``scratch``. Strings are
    written as strings (``strings_to_formulas``, ``_urls`` and ``_numbers`` off)."""
    import xlsxwriter

    options = {"constant_memory": True, "tmpdir": str(scratch),
               "strings_to_formulas": False, "strings_to_urls": False,
               "strings_to_numbers": False, "remove_timezone": True}
    with contextlib.closing(xlsxwriter.Workbook(str(target), options)) as book:
        ws = book.add_worksheet(_sheet_name(sheet))
        formats = {"bold": book.add_format({"bold": True}),
                   "money": book.add_format({"num_format": "#,##0.00"}),
                   "decimal": book.add_format({"num_format": "0.00######"}),
                   "date": book.add_format({"num_format": "yyyy-mm-dd"}),
                   "datetime": book.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"})}
        for col, d in enumerate(cursor.description):
            ws.write_string(0, col, for_excel(d[0]), formats["bold"])
        ws.freeze_panes(1, 0)
        rows = 0
        while batch := cursor.fetchmany(10_000):
            if rows + len(batch) > XLSX_MAX_ROWS:
                raise ExportError(f"{sheet}: more than {XLSX_MAX_ROWS:,} rows, Excel's "
                                  "limit; narrow --start/--end or --location, or export "
                                  "csv or parquet")
            for row in batch:
                rows += 1
                for col, value in enumerate(row):
                    _xlsx_cell(ws, rows, col, value, formats)
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
