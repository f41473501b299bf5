"""``pos-etl report``: a static HTML page an owner or accountant opens in a browser.

Per location: the last 30 days' turnover as a chart (inline SVG, one point per business
date loaded, a date not loaded a gap), how many of the dates it should have are loaded,
the daily close table, the payment mix, and, with its bank statements loaded, what of
those days is not at the bank yet (a bar per day: not yet due, open) with each open
item; for the tenant the open voucher liability;
and any failed data check or source drift. Every figure is read from the warehouse; the
page needs no server and loads nothing from the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb

from pipeline.core.money import format_money
from pipeline.core.settings import Settings
from pipeline.outputs.pages import render_page
from pipeline.sqlrunner.checks import run_checks
from pipeline.warehouse.coverage import Gaps, gaps, warehouse_days
from pipeline.warehouse.project import parse_cache_dir, shipped
from pipeline.warehouse.state import recorded_failures

WINDOW_DAYS = 30


@dataclass(frozen=True)
class CloseDay:
    """A row of ``rpt_daily_close``."""

    business_date: date
    receipts: int
    revenue: Decimal
    net: Decimal
    vat: Decimal
    tips: Decimal
    non_revenue: Decimal
    payments: Decimal
    difference: Decimal
    closed: bool
    spec_turnover_net: Decimal


@dataclass(frozen=True)
class PaymentShare:
    payment_type: str
    account: str
    """The payment type's fibu account, or empty."""
    amount: Decimal


@dataclass(frozen=True)
class Drift:
    business_date: date
    before: Decimal
    after: Decimal


@dataclass(frozen=True)
class VoucherLiability:
    category: str
    open_vouchers: int
    outstanding: Decimal


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    business_date: date
    revenue: Decimal


@dataclass(frozen=True)
class Chart:
    """The geometry of a line chart of the days' revenue after discounts: one point per
    business date loaded (a day without receipts at zero), placed by its date, so a date
    not loaded is a gap between two lines, not a line drawn across it."""

    lines: list[list[Point]]
    top: Decimal
    width: int = 720
    height: int = 220
    pad: int = 40

    @property
    def baseline(self) -> int:
        return self.height - self.pad

    @property
    def points(self) -> list[Point]:
        return [p for line in self.lines for p in line]

    @property
    def labelled(self) -> list[Point]:
        """The points whose date is written under the axis: at most about seven, never
        closer than a seventh of the axis (the newest always)."""
        gap = (self.width - 2 * self.pad) / 7
        shown: list[Point] = []
        for p in reversed(self.points):  # from the newest, leftwards
            if not shown or shown[-1].x - p.x >= gap:
                shown.append(p)
        return shown[::-1]

    @classmethod
    def of(cls, days: list[CloseDay], first: date, last: date,
           loaded: set[date] | None = None) -> Chart:
        """The chart of ``first``..``last``: the daily closes ``days``, and the dates of
        ``loaded`` without a close at zero (every date of ``days`` is loaded)."""
        revenue = {d.business_date: d.revenue for d in days}
        loaded = (loaded or set()) | set(revenue)
        top = max(max(revenue.values(), default=Decimal(1)), Decimal(1))
        chart = cls([], top)
        span = max((last - first).days, 1)
        inner_width, inner_height = chart.width - 2 * chart.pad, chart.height - 2 * chart.pad
        line: list[Point] = []
        for n in range((last - first).days + 1):
            day = first + timedelta(days=n)
            if day not in loaded:  # a hole: the line ends here
                if line:
                    chart.lines.append(line)
                line = []
                continue
            amount = revenue.get(day, Decimal(0))
            line.append(Point(chart.pad + inner_width * (n / span),
                              chart.baseline - float(amount / top) * inner_height,
                              day, amount))
        if line:
            chart.lines.append(line)
        return chart


@dataclass(frozen=True)
class BankItem:
    """A row of ``rpt_bank_reconciliation`` still open: a day's card batch or cash, or a
    bank entry, with what is open of it."""

    business_date: date
    payment_type: str
    """A card type, ``cash``, or empty for a bank entry that pays nothing of the POS."""
    reason: str
    amount: Decimal
    days_open: int | None


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    business_date: date
    in_transit: Decimal
    """Not yet due."""
    open: Decimal
    """Open for another reason: missing, short, a chargeback, ..."""
    transit_top: float
    open_top: float


@dataclass(frozen=True)
class BankChart:
    """Bars of the money of each business date still on its way to the bank (not yet
    due, from the baseline) and open (above it), placed by date as the revenue chart."""

    bars: list[Bar]
    top: Decimal
    width: int = 720
    height: int = 180
    pad: int = 40

    @property
    def baseline(self) -> int:
        return self.height - self.pad

    @classmethod
    def of(cls, items: list[BankItem], first: date, last: date) -> BankChart:
        days: dict[date, list[Decimal]] = {}
        for item in items:
            sums = days.setdefault(item.business_date, [Decimal("0.00"), Decimal("0.00")])
            sums[item.reason != "not yet due"] += item.amount
        top = max((abs(a) + abs(b) for a, b in days.values()), default=Decimal(1))
        top = max(top, Decimal(1))
        chart = cls([], top)
        span = max((last - first).days, 1)
        inner, high = chart.width - 2 * chart.pad, chart.height - 2 * chart.pad
        width = inner / (span + 1) * 0.7
        for day, (transit, open_) in sorted(days.items()):
            x = chart.pad + inner * ((day - first).days / span) - width / 2
            transit_top = chart.baseline - float(abs(transit) / top) * high
            chart.bars.append(Bar(x, width, day, transit, open_, transit_top,
                                  transit_top - float(abs(open_) / top) * high))
        return chart


@dataclass
class LocationReport:
    location_id: int
    days: list[CloseDay]  # oldest first
    payments: list[PaymentShare]
    drift: list[Drift]
    coverage: Gaps
    """The business dates of the window expected and those not in the warehouse."""
    loaded: set[date]
    """The window's dates the warehouse was built from (with or without a close)."""
    window: tuple[date, date]
    """The calendar days shown: ``WINDOW_DAYS`` up to the newest daily close."""
    turnover_net: Decimal = Decimal(0)
    """The spec's turnover of the window (fct_turnover_daily.turnover_net), exact."""
    bank: list[BankItem] | None = None
    """What of the window is not at the bank yet (rpt_bank_reconciliation's open rows);
    None where no statement of the location is loaded."""
    statements: tuple[date, int] | None = None
    """The location's last bank statement's closing date, and how many statements of the
    window do not open with the closing balance before them (one missing between)."""

    @property
    def bank_chart(self) -> BankChart:
        return BankChart.of(self.bank or [], *self.window)

    @property
    def bank_in_transit(self) -> Decimal:
        return sum((i.amount for i in self.bank or () if i.reason == "not yet due"),
                   Decimal(0))

    @property
    def bank_open(self) -> list[BankItem]:
        return [i for i in self.bank or () if i.reason != "not yet due"]

    @property
    def revenue_total(self) -> Decimal:
        return sum((d.revenue for d in self.days), Decimal(0))

    @property
    def payment_total(self) -> Decimal:
        return sum((d.payments for d in self.days), Decimal(0))

    @property
    def open_days(self) -> int:
        return sum(not d.closed for d in self.days)

    @property
    def chart(self) -> Chart:
        return Chart.of(self.days, *self.window, self.loaded)

    def share(self, payment: PaymentShare) -> float:
        """The payment type's share of the payments, in percent."""
        total = self.payment_total
        return float(payment.amount / total * 100) if total else 0.0


def _rows(con, sql: str, params: list | None = None) -> list[tuple]:
    return con.execute(sql, params or []).fetchall()


def location_names(settings: Settings) -> dict[int, str]:
    """What the report calls each location: its configured ``name``, else its short code."""
    return {loc.id: loc.name or loc.short_code for loc in settings.locations}


def _coverage(settings: Settings | None, location_id: int, first: date, last: date,
              loaded: set[date]) -> Gaps:
    """The dates of ``first``..``last`` the location should have (``pipeline.warehouse.coverage``;
    without settings, or for a location no longer configured, every date) and those of
    them not ``loaded``."""
    if settings is not None:
        found = gaps(settings, {location_id: loaded}, None, first, last, [location_id])
        if found and found[0].expected:
            return found[0]
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    return Gaps(location_id, "", first, last, len(days),
                tuple(d for d in days if d not in loaded))


def gather(con: duckdb.DuckDBPyConnection, settings: Settings | None = None
           ) -> tuple[list[LocationReport], list[VoucherLiability], list[str]]:
    """The report's figures from an open warehouse: per location, its last
    ``WINDOW_DAYS`` calendar days up to its newest daily close, the vouchers, the
    failed checks."""
    locations = []
    (path,) = con.execute("select path from duckdb_databases() "
                          "where database_name = current_database()").fetchone()
    built = warehouse_days(Path(path))  # from its state file
    for (location_id, newest) in _rows(con, "select location_id, max(business_date) "
                                            "from rpt_daily_close group by 1 order by 1"):
        first = newest - timedelta(days=WINDOW_DAYS - 1)
        days = [CloseDay(*row) for row in _rows(con, """
            select business_date, revenue_receipt_count, revenue_amount, net_amount,
                   vat_amount, tip_amount, non_revenue_amount, payment_amount,
                   difference_amount, is_closed, spec_turnover_net
            from rpt_daily_close where location_id = ? and business_date >= ?
            order by business_date""", [location_id, first])]
        loaded = {d for d in built.get(location_id, set()) if first <= d <= newest} \
            | {d.business_date for d in days}
        payments = [PaymentShare(*row) for row in _rows(con, """
            select payment_type_name, coalesce(fibu_account_nr, ''), sum(payment_amount)
            from rpt_daily_close_payments
            where location_id = ? and business_date >= ?
            group by all order by 3 desc""", [location_id, first])]
        drift = [Drift(*row) for row in _rows(con, """
            select business_date, turnover_net_before, turnover_net_after
            from rpt_source_drift where location_id = ? and business_date >= ?
            order by 1""", [location_id, first])]
        turnover = _rows(con, """
            select coalesce(sum(turnover_net), 0) from fct_turnover_daily
            where location_id = ? and business_date between ? and ?""",
                         [location_id, first, newest])[0][0]
        locations.append(LocationReport(location_id, days, payments, drift,
                                        _coverage(settings, location_id, first, newest,
                                                  loaded), loaded, (first, newest),
                                        turnover, *_bank(con, location_id, first, newest)))
    vouchers = [VoucherLiability(category, count, outstanding)
                for category, count, outstanding in _rows(con, """
        select voucher_category_name, open_voucher_count, outstanding_balance_amount
        from fct_voucher_liability_daily
        where snapshot_date = (select max(snapshot_date) from fct_voucher_liability_daily)
        order by 1""")]
    failed = []
    project = shipped()
    checks = project.checks
    recorded = recorded_failures(Path(path))
    for check, outcome in zip(checks, run_checks(con, checks, project.models, recorded,
                                                   project.sources.keys, parse_cache_dir()),
                              strict=True):
        if not outcome.passed:
            failed.append(f"{'WARN' if check.severity == 'warn' else 'FAILED'} "
                          f"{check.model}: {check.name} ({outcome.failing_rows} rows): "
                          f"{check.description}")
    return locations, vouchers, failed


def _bank(con: duckdb.DuckDBPyConnection, location_id: int, first: date, last: date
          ) -> tuple[list[BankItem] | None, tuple[date, int] | None]:
    """The window's open rows of the bank reconciliation, and how far the statements
    reach with the gaps among them; (None, None) without statements."""
    try:
        ((reach, gaps),) = _rows(con, """
            select max(closing_date), count(*) filter (
                where balance_gap_amount <> 0 and closing_date between ? and ?)
            from dim_bank_statements where location_id = ?""", [first, last, location_id])
    except duckdb.CatalogException:  # a warehouse built before the bank
        return None, None
    if reach is None:
        return None, None
    return [BankItem(*row) for row in _rows(con, """
        select business_date, coalesce(payment_type_name, ''), reason, difference_amount,
               days_open
        from rpt_bank_reconciliation
        where location_id = ? and is_open and business_date between ? and ?
        order by business_date, payment_type_name, reason""", [location_id, first, last])], \
        (reach, gaps)


def render(locations: list[LocationReport], vouchers: list[VoucherLiability],
           failed: list[str], names: dict[int, str], warehouse: Path, now: datetime) -> str:
    return render_page("report.html.j2", locations=locations, vouchers=vouchers,
                       failed=failed, names=names, warehouse=warehouse, now=now)


def write_report(warehouse: Path, output: Path, names: dict[int, str],
                 now: datetime | None = None, settings: Settings | None = None
                 ) -> tuple[int, int]:
    """Write the report of the warehouse at ``warehouse``; returns (locations, days).
    ``settings`` say which dates each location should have (else: every date)."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        locations, vouchers, failed = gather(con, settings)
    page = render(locations, vouchers, failed, names, warehouse, now or datetime.now())
    output.parent.mkdir(parents=True, exist_ok=True)
    temp = output.with_name(f".{output.name}.tmp")
    temp.write_text(page, encoding="utf-8")
    temp.replace(output)
    return len(locations), sum(len(loc.days) for loc in locations)


def markdown_close(con: duckdb.DuckDBPyConnection, days: int = 7) -> str:
    """The last ``days`` daily closes of every location as a Markdown table (the Dagster
    UI shows it on ``warehouse/rpt_daily_close``)."""
    rows = con.execute(f"""
        select location_id, business_date, revenue_amount, vat_amount, tip_amount,
               payment_amount, difference_amount, is_closed
        from rpt_daily_close
        qualify row_number() over (partition by location_id
                                   order by business_date desc) <= {days}
        order by location_id, business_date""").fetchall()
    lines = ["| location | business date | revenue | VAT | tips | payments | difference | |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for location_id, day, *amounts, closed in rows:
        lines.append(f"| {location_id} | {day} | "
                     + " | ".join(format_money(amount) for amount in amounts)
                     + f" | {'closed' if closed else '**open**'} |")
    return "\n".join(lines)
