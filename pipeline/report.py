"""``pos-etl report``: a static HTML page an owner or accountant opens in a browser.

Per location: the last 30 business days' turnover as a chart (inline SVG, one point per
day), the daily close table, the payment mix; for the tenant the open voucher liability;
and any failed data check or source drift. Every figure is read from the warehouse; the
page needs no server and loads nothing from the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from pipeline.checks import CHECKS, run_check
from pipeline.money import format_money
from pipeline.pages import render_page
from pipeline.settings import Settings

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
    day: CloseDay


@dataclass(frozen=True)
class Chart:
    """The geometry of a line chart of the days' revenue after discounts."""

    points: list[Point]
    top: Decimal
    width: int = 720
    height: int = 220
    pad: int = 40

    @property
    def baseline(self) -> int:
        return self.height - self.pad

    @property
    def labelled(self) -> list[Point]:
        """The points whose date is written under the axis (about six)."""
        n = len(self.points)
        return [p for i, p in enumerate(self.points) if i % max(1, n // 6) == 0 or i == n - 1]

    @classmethod
    def of(cls, days: list[CloseDay]) -> Chart:
        top = max(max((d.revenue for d in days), default=Decimal(1)), Decimal(1))
        chart = cls([], top)
        span = max(len(days) - 1, 1)
        inner_width, inner_height = chart.width - 2 * chart.pad, chart.height - 2 * chart.pad
        for i, day in enumerate(days):
            chart.points.append(Point(chart.pad + inner_width * (i / span),
                                      chart.baseline - float(day.revenue / top) * inner_height,
                                      day))
        return chart


@dataclass
class LocationReport:
    location_id: int
    days: list[CloseDay]  # oldest first
    payments: list[PaymentShare]
    drift: list[Drift]

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
        return Chart.of(self.days)

    def share(self, payment: PaymentShare) -> float:
        """The payment type's share of the payments, in percent."""
        total = self.payment_total
        return float(payment.amount / total * 100) if total else 0.0


def _rows(con, sql: str, params: list | None = None) -> list[tuple]:
    return con.execute(sql, params or []).fetchall()


def location_names(settings: Settings) -> dict[int, str]:
    """What the report calls each location: its configured ``name``, else its short code."""
    return {loc.id: loc.name or loc.short_code for loc in settings.locations}


def gather(con: duckdb.DuckDBPyConnection
           ) -> tuple[list[LocationReport], list[VoucherLiability], list[str]]:
    """The report's figures from an open warehouse: per location, the vouchers, the
    failed checks."""
    locations = []
    for (location_id,) in _rows(con, "select distinct location_id from rpt_daily_close "
                                     "order by 1"):
        days = [CloseDay(*row) for row in _rows(con, f"""
            select business_date, revenue_receipt_count, revenue_amount, net_amount,
                   vat_amount, tip_amount, non_revenue_amount, payment_amount,
                   difference_amount, is_closed, spec_turnover_net
            from rpt_daily_close where location_id = ?
            order by business_date desc limit {WINDOW_DAYS}""", [location_id])[::-1]]
        first = days[0].business_date
        payments = [PaymentShare(*row) for row in _rows(con, """
            select payment_type_name, coalesce(fibu_account_nr, ''), sum(payment_amount)
            from rpt_daily_close_payments
            where location_id = ? and business_date >= ?
            group by all order by 3 desc""", [location_id, first])]
        drift = [Drift(*row) for row in _rows(con, """
            select business_date, turnover_net_before, turnover_net_after
            from rpt_source_drift where location_id = ? and business_date >= ?
            order by 1""", [location_id, first])]
        locations.append(LocationReport(location_id, days, payments, drift))
    vouchers = [VoucherLiability(category, count, Decimal(cents) / 100)
                for category, count, cents in _rows(con, """
        select voucher_category_name, open_voucher_count, outstanding_balance_cents
        from fct_voucher_liability_daily
        where snapshot_date = (select max(snapshot_date) from fct_voucher_liability_daily)
        order by 1""")]
    failed = []
    for check in CHECKS:
        outcome = run_check(con, check)
        if not outcome.passed:
            failed.append(f"{check.model}: {check.name} ({outcome.failing_rows} rows): "
                          f"{check.description}")
    return locations, vouchers, failed


def render(locations: list[LocationReport], vouchers: list[VoucherLiability],
           failed: list[str], names: dict[int, str], warehouse: Path, now: datetime) -> str:
    return render_page("report.html.j2", locations=locations, vouchers=vouchers,
                       failed=failed, names=names, warehouse=warehouse, now=now)


def write_report(warehouse: Path, output: Path, names: dict[int, str],
                 now: datetime | None = None) -> tuple[int, int]:
    """Write the report of the warehouse at ``warehouse``; returns (locations, days)."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        locations, vouchers, failed = gather(con)
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
