"""The daily closes as booking files, DATEV or BMD, one per booking period
(``pos-etl export --format datev|bmd``), and the closing of a period
(``pos-etl close-period``).

A closed period's file is given again as it was closed; the first open period's file
carries the corrections of the closed ones (``pipeline.accounting.ledger``); every file an export
writes is recorded in the lake with its hash and totals per location and account.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb

from pipeline.accounting import ledger
from pipeline.accounting.bookings import (
    Booking,
    BookingError,
    ChartViolation,
    Period,
    booked,
    by_period,
    check_accounts,
    check_chart,
    period_of,
    suspense_warning,
)
from pipeline.accounting.formats import booking_format
from pipeline.core.outcomes import ConfigError
from pipeline.core.settings import Settings
from pipeline.lake.open import make_lake
from pipeline.warehouse.coverage import Gaps, gaps, warehouse_days
from pipeline.warehouse.selection import (
    Exported,
    ExportError,
    Selection,
    check_warehouse,
    remove_leftovers,
)


class AccountsRefused(ExportError, ConfigError):
    """The bookings hold an account outside the chart's ranges for its role, or a payment
    type without an account: the config must say more (exit 2, as a config error)."""


def export_bookings(settings: Settings, sel: Selection, fmt: str, output: Path) -> Exported:
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
    remove_leftovers(folder, target.name)
    scratch = folder / f".{target.name}.{os.getpid()}.export"
    scratch.mkdir()
    try:
        written, warnings, rows, exported = _write_bookings(settings, sel, fmt, scratch)
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
        ledger.record_export(make_lake(settings), fmt, exported)
        return Exported(rows, warnings, files)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _write_bookings(settings: Settings, sel: Selection, fmt: str,
                    scratch: Path) -> tuple[dict, list[str], int, list]:
    """The booking files of each period, written in ``scratch``: {period: file}, the
    warnings, the bookings, and what to record of each file (``ledger.ExportedFile``).
    A closed period gives the file it was closed with (or, in the other format or for
    part of it, its recorded bookings); the first open period carries the corrections
    of the closed ones (``pipeline.accounting.ledger``)."""
    year_start = settings.accounting.year_start
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
    written, booked, seen, rows = {}, {}, None, 0
    for period in sorted(periods, key=lambda p: p.first):
        path = scratch / booking_format(fmt).file_name.format(period.name)
        span = (max(period.first, sel.start or period.first),
                min(period.last, sel.end or period.last))
        items, now = periods[period], None
        if period.name in closed:
            c = closed[period.name]
            with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
                recorded = ledger.closed_bookings(con, c)
            if c.format == fmt and span == (period.first, period.last) and not sel.location_ids:
                path.write_bytes(c.content)  # as it was closed, byte for byte
                written[period], booked[period] = path, recorded
                rows += c.bookings
                continue
            items = [b for b in recorded if span[0] <= b.day <= span[1]
                     and (not sel.location_ids or b.location_id in sel.location_ids)]
            now = c.closed_at
        done = _render(settings, fmt, items, period, span, path, now,
                       locked=period.name in closed)
        seen = done if seen is None else seen.merged(done)
        written[period], booked[period] = path, items
        rows += len(items)
    warnings = [seen.warning(booking_format(fmt).title)] if seen else []
    suspense = suspense_warning([b for items in booked.values() for b in items],
                                settings.accounting.chart_of_accounts.suspense_account)
    warnings += [suspense] if suspense else []
    if placeholders := booking_format(fmt).placeholders(settings):
        warnings.append(f"{placeholders} before the files go to {booking_format(fmt).title}")
    open_ = sorted((p for p in periods if p.name not in closed), key=lambda p: p.first)
    if open_:
        warnings += [f"the bank's side is incomplete: {line}" for line in bank_gaps(
            settings, max(open_[0].first, sel.start or open_[0].first),
            min(open_[-1].last, sel.end or open_[-1].last), sel.location_ids)]
    exported = [ledger.ExportedFile(period, path.name, path.read_bytes(), booked[period],
                                    period.name in closed)
                for period, path in written.items()]
    return written, warnings, rows, exported


def _current_bookings(settings: Settings, sel: Selection, closed: dict,
                      first_open: Period | None) -> list[Booking]:
    """The selection's bookings as the warehouse has them, and the corrections where the
    selection holds the first open period's first day."""
    locations = {loc.id: loc for loc in settings.locations}
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        accounts = settings.accounting.chart_of_accounts
        try:
            check_accounts(con, accounts, settings.accounting.pass_through, settings.bank)
            ledger.check_current(con, closed)
            bookings = booked(con, sel.start, sel.end, sel.location_ids, locations, accounts)
            check_chart(bookings, accounts)
            if first_open and (sel.start or first_open.first) <= first_open.first <= \
                    (sel.end or first_open.first):
                bookings += ledger.corrections(con, first_open, sel.location_ids, locations)
        except ChartViolation as exc:
            raise AccountsRefused(str(exc)) from None
        except BookingError as exc:
            raise ExportError(str(exc)) from None
        except duckdb.CatalogException as exc:
            raise ExportError(f"the warehouse was built by an older pos-etl ({exc}): run "
                              "`pos-etl build` first") from None
    return bookings


def _render(settings: Settings, fmt: str, items: list[Booking], period: Period,
            span: tuple[date, date], path: Path, now: datetime | None = None,
            incomplete: bool = False, locked: bool = False):
    """One booking file; ``locked``: a closed period's, which DATEV is told to lock
    (Festschreibung) unless [accounting.datev] lock_closed_periods is false."""
    try:
        return booking_format(fmt).write(settings, items, period, span, path, now,
                                          incomplete, locked)
    except BookingError as exc:
        raise ExportError(str(exc)) from None


class IncompletePeriod(ExportError):
    """A period with business dates missing is not closed (without ``allow_incomplete``)."""

    def __init__(self, period: Period, missing: list[Gaps],
                 command: Callable[[str], str] = lambda args: f"pos-etl {args}"):
        self.missing = missing
        days = sum(len(g.missing) for g in missing)
        first = min(d for g in missing for d in g.missing)
        last = max(d for g in missing for d in g.missing)
        super().__init__(
            f"period {period.name} is incomplete: {days} business date{'s' * (days > 1)} "
            f"missing in the warehouse; " + "; ".join(g.line() for g in missing)
            + f". Load them ({command(f'load --start {first} --end {last} --missing-only')})"
            " and close again; a "
            "date loaded after the close is booked as a correction in a later period. "
            "--allow-incomplete closes it anyway.")


def bank_gaps(settings: Settings, first: date, last: date,
              location_ids: list[int] | None = None) -> list[str]:
    """What the warehouse's statements lack of ``first`` .. ``last``, per configured bank
    account whose side the files book (``[bank] book``) at ``location_ids`` (None: all): a
    statement closing on or after the range's last bank day (Monday to Friday: a bank
    books nothing on a weekend), one opening by its first, and the chain between them (a
    statement whose opening balance is not the closing balance before it: one is
    missing). Empty: the bank's side of the range is whole."""
    if not settings.bank.book or not settings.bank.accounts:
        return []
    while first.weekday() >= 5 and first < last:
        first += timedelta(days=1)
    while last.weekday() >= 5 and last > first:
        last -= timedelta(days=1)
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        try:
            held = {iban: rest for iban, *rest in con.execute("""
                select iban, min(opening_date), max(closing_date),
                       string_agg(statement_id || ' (' || balance_gap_amount || ' EUR)', ', '
                                  order by closing_date) filter (
                           where balance_gap_amount <> 0 and closing_date between ? and ?)
                from dim_bank_statements group by iban""", [first, last]).fetchall()}
        except duckdb.CatalogException:
            held = {}
    out = []
    for iban, loc in sorted(settings.bank_accounts.items()):
        if location_ids and loc not in location_ids:
            continue
        account = f"bank account {iban} (location {loc})"
        if iban not in held:
            out.append(f"{account}: no statement in the warehouse; its payouts, fees and "
                       f"deposits of {first} .. {last} are not booked")
            continue
        opens, closes, broken = held[iban]
        if opens > first:
            out.append(f"{account}: its statements begin {opens}; the bank's entries "
                       "before it are not booked")
        if closes < last:
            out.append(f"{account}: its statements reach {closes}; the bank's entries "
                       "after it are not booked")
        if broken:
            out.append(f"{account}: statements that do not continue the one before them "
                       f"(a statement missing): {broken}")
    return out


class BankIncomplete(ExportError):
    """A period whose bank statements are not whole is not closed (without
    ``allow_incomplete``): its bank bookings would come later, as corrections."""

    def __init__(self, period: Period, lacking: list[str]):
        self.lacking = lacking
        super().__init__(
            f"period {period.name}: the bank's side is incomplete: " + "; ".join(lacking)
            + ". Load the statements and close again (statements loaded after the close "
            "are booked as corrections in a later period); --allow-incomplete closes it "
            "anyway.")


class SuspensePeriod(ExportError):
    """A period whose bookings put money on the suspense account is not closed (without
    ``allow_suspense``): an advisor would send it back."""

    def __init__(self, period: Period, lines: list[Booking], suspense: str):
        total = sum((abs(b.amount) for b in lines), Decimal(0))
        shown = "; ".join(suspense_line(b) for b in lines[:SHOWN])
        more = f"; and {len(lines) - SHOWN} more" if len(lines) > SHOWN else ""
        super().__init__(
            f"period {period.name} books {len(lines)} line(s) of {total:,.2f} EUR to the "
            f"suspense account {suspense}: {shown}{more}. Give each payment group an account "
            "([accounting.accounts] non_revenue_accounts) or clear the days' differences, "
            "build, and close again; --allow-suspense closes it anyway (recorded).")


SHOWN = 5
"""Suspense lines a refused close names (the rest counted)."""


def suspense_line(b: Booking) -> str:
    """What a suspense booking is, for the accountant: the payment group or the day's
    difference, location, business date, amount."""
    what = b.where.split(", ", 2)[-1]
    return f"{what}, location {b.location_id}, {b.day}: {b.amount:,.2f} EUR"


def suspense_bookings(bookings: list[Booking], suspense: str) -> list[Booking]:
    """The bookings (not corrections) that put money on the suspense account."""
    return [b for b in bookings if b.amount and b.kind != "correction"
            and suspense in (b.account, b.counter)]


def close_period(settings: Settings, day: date, fmt: str, today: date | None = None,
                 allow_incomplete: bool = False, allow_suspense: bool = False,
                 now: datetime | None = None) -> ledger.ClosedPeriod:
    """Close the booking period ``day`` lies in: write its file in ``fmt`` (its daily
    closes and, if earlier periods are closed, their corrections) and commit it with its
    bookings to the lake (``pipeline.accounting.ledger``). A build then gives the warehouse the
    closed period; an export of it gives this file.

    Refused (``IncompletePeriod``) while a configured location lacks a business date of
    the period in the warehouse (``pipeline.warehouse.coverage``), unless ``allow_incomplete``: then
    the close's record and the file's description say so."""
    check_warehouse(settings)
    year_start = settings.accounting.year_start
    period = period_of(day, year_start)
    lake = make_lake(settings)
    closed = ledger.closed_periods(lake)
    try:
        ledger.check_closable(period, closed, today or date.today())
    except BookingError as exc:
        raise ExportError(str(exc)) from None
    if now is None:  # a given ``today`` is the day the close runs: at its end, in UTC
        now = datetime.now(UTC) if today is None else \
            datetime.combine(today, time.max, UTC)
    over = settings.last_date_over(now)
    if period.last > over:  # a location's last business day of the period is under way
        raise ExportError(f"period {period.name} has not ended for every location: its last "
                          f"business date {period.last} is not over yet (the last one "
                          f"over is {over}; a location's day ends at its "
                          "business_day_starts); close it once it is")
    missing = [g for g in gaps(settings, warehouse_days(settings.warehouse.warehouse_path),
                               None, period.first, period.last) if g.missing]
    if missing and not allow_incomplete:
        raise IncompletePeriod(period, missing, settings.command)
    lacking = bank_gaps(settings, period.first, period.last)
    if lacking and not allow_incomplete:
        raise BankIncomplete(period, lacking)
    incomplete = "; ".join([g.line() for g in missing] + lacking) or None
    sel = Selection("rpt_daily_close", period.first, period.last, None)
    bookings = _current_bookings(settings, sel, closed, ledger.open_period(closed, year_start))
    if not bookings:  # closing a month before it is loaded would book all of it later
        raise ExportError(f"period {period.name}: the warehouse has no daily close in it; "
                          "load its days first")
    if placeholders := booking_format(fmt).placeholders(settings):
        raise ExportError(f"{placeholders} before a period is closed: its file stays as it "
                          "is closed")
    suspense_account = settings.accounting.chart_of_accounts.suspense_account
    on_suspense = suspense_bookings(bookings, suspense_account)
    if on_suspense and not allow_suspense:
        raise SuspensePeriod(period, on_suspense, suspense_account)
    suspense = None if not on_suspense else (
        f"{len(on_suspense)} line(s) of "
        f"{sum((abs(b.amount) for b in on_suspense), Decimal(0)):,.2f} EUR on the suspense "
        f"account {suspense_account}: " + "; ".join(map(suspense_line, on_suspense)))
    name = booking_format(fmt).file_name.format(period.name)
    closed_at = datetime.now(UTC)
    with tempfile.TemporaryDirectory(dir=settings.warehouse.data_dir) as tmp:
        path = Path(tmp) / name
        _render(settings, fmt, bookings, period, (period.first, period.last), path, closed_at,
                incomplete is not None, locked=True)
        content = path.read_bytes()
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        frozen = ledger.frozen_reports(con, period)  # the reports as the file was made
    return ledger.record(lake, period, fmt, name, content, bookings, closed_at, incomplete,
                         suspense, frozen)
