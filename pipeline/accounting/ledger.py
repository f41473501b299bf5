"""Closed booking periods: what was booked stays booked (GoBD).

``pos-etl close-period 2026-10`` writes the period's booking file (DATEV or BMD), then
commits to the lake's ``ledger`` area, partition ``period=2026-10``, the file itself and
every booking in it (``closed_periods``, ``closed_bookings``). From then on:

- an export of the period gives that file again, byte for byte (the other format is
  written from the recorded bookings);
- a change the POS makes to its days (source drift, a corrected receipt) does not touch
  it: the warehouse's ``rpt_period_corrections`` holds the difference per location,
  business date and booking (accounts and tax rate) between what the period's days book
  now and what was booked for them; these **correction bookings** go into the first
  open period, dated its first day, with a text naming the original business date, and
  are booked (recorded) when that period is closed.

Periods are closed in order, each the month after the last closed one (the first
close may be any month that has ended), so "the first open period" is one month.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import duckdb
import pyarrow as pa

from pipeline.accounting.bookings import Booking, BookingError, Period, period_of
from pipeline.areas.exports.tables import EXPORT_TABLES, EXPORTS
from pipeline.areas.ledger.tables import FROZEN_REPORTS, LEDGER_TABLES
from pipeline.lake.store import LakeStore

AREA = "ledger"
@dataclass(frozen=True)
class ClosedPeriod:
    period: Period
    closed_at: datetime
    format: str
    file_name: str
    sha256: str
    content: bytes
    load_id: str
    bookings: int
    incomplete: str | None = None
    """Closed with business dates missing (``--allow-incomplete``): which, per location."""
    suspense: str | None = None
    """Closed with bookings on the suspense account (``--allow-suspense``): which."""

    @property
    def name(self) -> str:
        return self.period.name


def closed_periods(lake: LakeStore) -> dict[str, ClosedPeriod]:
    """Every closed period, by name, from the lake."""
    out = {}
    for partition in lake.partitions(AREA):
        row = lake.read(AREA, "closed_periods", partition).to_pylist()[0]
        record = lake.committed(AREA, partition)
        out[row["period"]] = ClosedPeriod(
            Period(row["first_date"], row["last_date"], row["year_start"]), row["closed_at"],
            row["format"], row["file_name"], row["sha256"], row["content"], record.load_id,
            row["bookings"], row.get("incomplete"), row.get("suspense"))
    return dict(sorted(out.items(), key=lambda item: item[1].period.first))


def closed_bookings(con: duckdb.DuckDBPyConnection, closed: ClosedPeriod) -> list[Booking]:
    """The bookings a closed period booked, as they were booked: the warehouse's
    ``rpt_closed_bookings`` (the lake's record as the last build read it; an export
    refuses a warehouse not built since the last close, ``check_current``)."""
    rows = con.execute("""
        select amount, debit_account, credit_account, business_date, document_number,
               booking_text, location_id, cost_center, tax_rate_percent, tax_amount,
               booking_kind, original_date
        from rpt_closed_bookings where period = ?
        order by business_date, location_id, booking_number""", [closed.name]).fetchall()
    return [Booking(amount, debit, credit, day, document, text,
                    f"location {loc}, closed period {closed.name}", loc, cost_center, rate,
                    tax, kind, original)
            for (amount, debit, credit, day, document, text, loc, cost_center, rate, tax,
                 kind, original) in rows]


def open_period(closed: dict[str, ClosedPeriod], year_start: str) -> Period | None:
    """The first open period: the month after the last closed one (None before any close)."""
    if not closed:
        return None
    last = max(c.period.last for c in closed.values())
    return period_of(last + timedelta(days=1), year_start)


def closed_period_warnings(lake: LakeStore, year_start: str, start: date,
                           end: date) -> list[str]:
    """A warning per closed booking period that ``start``..``end`` reaches into: what a
    load changes there is booked as corrections in the first open period."""
    closed = closed_periods(lake)
    if not closed:
        return []
    later = open_period(closed, year_start)
    warnings = []
    for period in closed.values():
        first, last = max(start, period.period.first), min(end, period.period.last)
        if first <= last:
            dates = f"{first} lies" if first == last else f"{first} .. {last} lie"
            warnings.append(f"{dates} in the closed period {period.name}: what changes "
                            f"there is booked as corrections in {later.name}")
    return warnings


def check_current(con: duckdb.DuckDBPyConnection, closed: dict[str, ClosedPeriod]) -> None:
    """Raise ``BookingError`` unless the warehouse was built with the lake's closed periods
    (else its corrections would be those of another set of closed periods)."""
    built = dict(con.execute("select period, load_id from rpt_closed_periods")
                 .fetchall())
    if built != {name: c.load_id for name, c in closed.items()}:
        raise BookingError("the warehouse was built before the last period was closed (its "
                           f"closed periods: {', '.join(sorted(built)) or 'none'}; the lake's: "
                           f"{', '.join(closed) or 'none'}): run `pos-etl build` first")


def corrections(con: duckdb.DuckDBPyConnection, period: Period, location_ids: list[int] | None,
                locations: dict) -> list[Booking]:
    """The correction bookings the first open ``period`` carries (``rpt_period_corrections``),
    dated its first day, with their original business date in the text."""
    where = "" if not location_ids else \
        f"where location_id in ({', '.join(str(int(x)) for x in location_ids)})"
    rows = con.execute(f"""
        select location_id, original_date, debit_account, credit_account, amount,
               tax_rate_percent, tax_amount, booking_text
        from rpt_period_corrections {where}
        order by location_id, original_date, debit_account, credit_account,
                 tax_rate_percent""").fetchall()
    out = []
    for loc, original, debit, credit, amount, rate, tax, text in rows:
        place = locations.get(loc)
        code = place.short_code if place else str(loc)
        text = text if text.endswith(f" {code}") else f"{text} {code}"  # as booked: with it
        out.append(Booking(
            Decimal(amount), debit, credit, period.first,
            f"K{loc}-{original:%Y%m%d}", f"Korr. {original:%d.%m.%Y} {text}",
            f"location {loc}, correction of business date {original}", loc,
            place.cost_center if place else None,
            None if rate is None else Decimal(rate), None if tax is None else Decimal(tax),
            "correction", original))
    return out


def pending_report_corrections(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Per closed period, the correction rows the first open period's cash book and VAT
    report carry for its days (``rpt_cash_book``, ``rpt_vat_by_rate``: ``corrects_date``),
    until that period is closed; empty for a warehouse built before them."""
    try:
        return dict(con.execute("""
            select p.period, count(*)
            from (select corrects_date from rpt_cash_book
                  where corrects_date is not null and closed_period is null
                  union all
                  select corrects_date from rpt_vat_by_rate
                  where corrects_date is not null and closed_period is null) as c
            inner join rpt_closed_periods as p
                on c.corrects_date between p.first_date and p.last_date
            group by all order by all""").fetchall())
    except duckdb.Error:
        return {}


def frozen_reports(con: duckdb.DuckDBPyConnection, period: Period) -> dict[str, pa.Table]:
    """The rows of the reports a close freezes, of the period's days, as the warehouse
    reports them now (the period is open: its days as the data says, and the corrections
    of closed days it carries, dated its first day), as the ledger's tables. A day held
    as provisional (loaded before it was over) is not frozen: it is lacking, as in the
    bookings (a close takes it only with ``--allow-incomplete``)."""
    out = {}
    for table, report in FROZEN_REPORTS.items():
        schema = LEDGER_TABLES[table]
        columns = ", ".join(f'"{f.name}"' for f in schema if f.name != "period")
        own_day = "corrects_date is null and " if "corrects_date" in schema.names else ""
        result = con.execute(f"""
            select '{period.name}' as period, {columns} from {report}
            where business_date between ? and ? and closed_period is null
              and not ({own_day}(location_id, business_date) in (
                  select (location_id, business_date) from rpt_coverage
                  where coverage_status = 'provisional'))
            order by all""", [period.first, period.last])
        names = [d[0] for d in result.description]
        out[table] = pa.Table.from_pylist([dict(zip(names, row, strict=True))
                                           for row in result.fetchall()], schema=schema)
    return out


def record(lake: LakeStore, period: Period, fmt: str, file_name: str, content: bytes,
           bookings: list[Booking], closed_at: datetime | None = None,
           incomplete: str | None = None, suspense: str | None = None,
           frozen: dict[str, pa.Table] | None = None) -> ClosedPeriod:
    """Commit the closed ``period``: its file and its bookings, in one lake commit
    (``incomplete``: the dates it was closed without; ``suspense``: what it closed on the
    suspense account)."""
    closed_at = closed_at or datetime.now(UTC)
    digest = hashlib.sha256(content).hexdigest()
    numbers: dict[tuple[int, date], int] = {}
    rows = []
    for b in bookings:
        n = numbers[(b.location_id, b.day)] = numbers.get((b.location_id, b.day), 0) + 1
        rows.append({"period": period.name, "location_id": b.location_id,
                     "business_date": b.day, "original_date": b.original_date or b.day,
                     "booking_number": n, "document_number": b.document,
                     "debit_account": b.account, "credit_account": b.counter,
                     "amount": b.amount, "tax_rate_percent": b.tax_rate,
                     "tax_amount": b.tax, "booking_kind": b.kind, "booking_text": b.text,
                     "cost_center": b.cost_center})
    tables = {
        "closed_periods": pa.Table.from_pylist([{
            "period": period.name, "first_date": period.first, "last_date": period.last,
            "year_start": period.year_start, "closed_at": closed_at, "format": fmt,
            "file_name": file_name, "sha256": digest, "content": content,
            "bookings": len(bookings), "incomplete": incomplete, "suspense": suspense,
            "reports_frozen": bool(FROZEN_REPORTS) or None}],
            schema=LEDGER_TABLES["closed_periods"]),
        "closed_bookings": pa.Table.from_pylist(rows, schema=LEDGER_TABLES["closed_bookings"]),
        **{table: (frozen or {}).get(table, LEDGER_TABLES[table].empty_table())
           for table in FROZEN_REPORTS},
    }
    lake.write(AREA, tables, {"period": period.name},
               metadata={"sha256": digest, "bookings": len(bookings)})
    return ClosedPeriod(period, closed_at, fmt, file_name, digest, content,
                        lake.committed(AREA, {"period": period.name}).load_id, len(bookings),
                        incomplete, suspense)


def check_closable(period: Period, closed: dict[str, ClosedPeriod], today: date) -> None:
    """Raise ``BookingError`` unless ``period`` may be closed now: it has ended, is not
    closed, and is the first open period (the month after the last closed one)."""
    if period.name in closed:
        c = closed[period.name]
        raise BookingError(f"period {period.name} was closed on {c.closed_at:%Y-%m-%d %H:%M} "
                           f"UTC ({c.file_name}); a closed period stays as it was booked")
    if period.last >= today:
        raise BookingError(f"period {period.name} has not ended (its last day is "
                           f"{period.last})")
    if closed:
        last = max(closed.values(), key=lambda c: c.period.last)
        if period.first != last.period.last + timedelta(days=1):
            raise BookingError(f"periods are closed in order: the next one to close is the "
                               f"one after {last.name}")


@dataclass(frozen=True)
class ExportedFile:
    period: Period
    file_name: str
    content: bytes
    bookings: list[Booking]
    is_closed: bool


def record_export(lake: LakeStore, fmt: str, files: list[ExportedFile],
                  exported_at: datetime | None = None) -> str:
    """Commit what an export wrote (each file's name, hash and bookings, the totals per
    period, location and account) to the lake's ``exports`` area; returns its id."""
    exported_at = exported_at or datetime.now(UTC)
    export_id = f"{exported_at:%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:8]}"
    totals: dict[tuple[str, int, str], list[Decimal]] = {}

    def add(period: str, loc: int, account: str, debit: Decimal, credit: Decimal) -> None:
        entry = totals.setdefault((period, loc, account), [Decimal(0), Decimal(0)])
        entry[0] += debit
        entry[1] += credit

    for f in files:
        for b in f.bookings:
            amount = abs(b.amount)
            debited, credited = (b.account, b.counter) if b.amount >= 0 else \
                (b.counter, b.account)
            add(f.period.name, b.location_id, debited, amount, Decimal(0))
            add(f.period.name, b.location_id, credited, Decimal(0), amount)
    tables = {
        "exported_files": pa.Table.from_pylist([{
            "export_id": export_id, "exported_at": exported_at, "format": fmt,
            "period": f.period.name, "file_name": f.file_name,
            "sha256": hashlib.sha256(f.content).hexdigest(), "bookings": len(f.bookings),
            "is_closed_period": f.is_closed} for f in files],
            schema=EXPORT_TABLES["exported_files"]),
        "exported_totals": pa.Table.from_pylist([{
            "export_id": export_id, "period": period, "location_id": loc, "account": account,
            "debit_amount": debit, "credit_amount": credit}
            for (period, loc, account), (debit, credit) in sorted(totals.items())],
            schema=EXPORT_TABLES["exported_totals"]),
    }
    lake.write(EXPORTS, tables, {"export_id": export_id})
    return export_id


def exported_digests(lake: LakeStore, fmt: str, period: str) -> set[str]:
    """The SHA-256 of every file the lake's ``exports`` area records for ``fmt`` and
    ``period``."""
    out = set()
    for partition in lake.partitions(EXPORTS):
        for row in lake.read(EXPORTS, "exported_files", partition).to_pylist():
            if row["format"] == fmt and row["period"] == period:
                out.add(row["sha256"])
    return out
