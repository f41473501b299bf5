"""``pos-etl report``: a static HTML page an owner or accountant opens in a browser.

Per location: the last 30 business days' turnover as a chart (inline SVG, one point per
day), the daily close table, the payment mix; for the tenant the open voucher liability;
and any failed data check or source drift. Every figure is read from the warehouse; the
page needs no server and loads nothing from the network.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from pipeline.checks import CHECKS, run_check
from pipeline.money import format_money
from pipeline.settings import Settings

WINDOW_DAYS = 30


@dataclass
class LocationReport:
    location_id: int
    days: list[tuple]  # the daily close rows, oldest first
    payments: list[tuple]  # payment type, fibu account, amount
    drift: list[tuple]  # business date, turnover before, after


def _rows(con, sql: str, params: list | None = None) -> list[tuple]:
    return con.execute(sql, params or []).fetchall()


def location_names(settings: Settings) -> dict[int, str]:
    """What the report calls each location: the sandbox's names, else the short codes."""
    if settings.uses_sandbox:
        from pos_sandbox import world

        return {loc.id: world.location(loc.id).name for loc in settings.locations
                if world.location(loc.id)}
    return {loc.id: loc.short_code for loc in settings.locations}


def gather(con: duckdb.DuckDBPyConnection
           ) -> tuple[list[LocationReport], list[tuple], list[str]]:
    """The report's figures from an open warehouse: per location, the vouchers, the
    failed checks."""
    locations = []
    for (location_id,) in _rows(con, "select distinct location_id from rpt_daily_close "
                                     "order by 1"):
        days = _rows(con, f"""
            select business_date, revenue_receipt_count, revenue_amount, net_amount,
                   vat_amount, tip_amount, non_revenue_amount, payment_amount,
                   difference_amount, is_closed, spec_turnover_net
            from rpt_daily_close where location_id = ?
            order by business_date desc limit {WINDOW_DAYS}""", [location_id])[::-1]
        first = days[0][0]
        payments = _rows(con, """
            select payment_type_name, coalesce(fibu_account_nr, ''), sum(payment_amount)
            from rpt_daily_close_payments
            where location_id = ? and business_date >= ?
            group by all order by 3 desc""", [location_id, first])
        drift = _rows(con, """
            select business_date, turnover_net_before, turnover_net_after
            from rpt_source_drift where location_id = ? and business_date >= ?
            order by 1""", [location_id, first])
        locations.append(LocationReport(location_id, days, payments, drift))
    vouchers = _rows(con, """
        select voucher_category_name, open_voucher_count, outstanding_balance_cents
        from fct_voucher_liability_daily
        where snapshot_date = (select max(snapshot_date) from fct_voucher_liability_daily)
        order by 1""")
    failed = []
    for check in CHECKS:
        outcome = run_check(con, check)
        if not outcome.passed:
            failed.append(f"{check.model}: {check.name} ({outcome.failing_rows} rows): "
                          f"{check.description}")
    return locations, vouchers, failed


def _chart(loc: LocationReport) -> str:
    """An SVG line chart of the days' revenue after discounts, one point per day."""
    width, height, pad = 720, 220, 40
    values = [d[2] for d in loc.days]
    top = max(max(values, default=Decimal(1)), Decimal(1))
    n = len(values)

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i / max(n - 1, 1))

    def y(v: Decimal) -> float:
        return height - pad - float(v / top) * (height - 2 * pad)

    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
    dots = "".join(
        f'<circle class="point" cx="{x(i):.1f}" cy="{y(v):.1f}" r="3.5" '
        f'data-date="{d[0]}" data-revenue="{v}"><title>{d[0]}: {format_money(v)}</title>'
        f"</circle>" for i, (v, d) in enumerate(zip(values, loc.days, strict=True)))
    labels = "".join(
        f'<text x="{x(i):.1f}" y="{height - 12}" text-anchor="middle">{d[0]:%d.%m}</text>'
        for i, d in enumerate(loc.days) if i % max(1, n // 6) == 0 or i == n - 1)
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="revenue per business day, location {loc.location_id}">'
            f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
            f'class="axis"/><text x="{pad}" y="{pad - 14}" class="scale">'
            f"max {format_money(top)}</text>"
            f'<polyline points="{points}" class="line"/>{dots}{labels}</svg>')


def _money(value) -> str:
    return html.escape(format_money(value))


def render(locations: list[LocationReport], vouchers: list[tuple], failed: list[str],
           names: dict[int, str], warehouse: Path, now: datetime) -> str:
    esc = html.escape
    parts = [f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>pos-etl report</title><style>{_STYLE}</style></head><body>
<h1>Turnover and daily close</h1>
<p class="meta">From <code>{esc(str(warehouse))}</code>, written {now:%Y-%m-%d %H:%M}.
Amounts in EUR, rounded half away from zero; revenue is after discounts (VAT included,
tips apart).</p>"""]
    if failed:
        parts.append('<section class="alert" id="failed-checks"><h2>Failed checks</h2><ul>'
                     + "".join(f"<li>{esc(f)}</li>" for f in failed) + "</ul></section>")
    else:
        parts.append('<p class="ok" id="failed-checks">Every data check passed.</p>')
    for loc in locations:
        total = sum((d[2] for d in loc.days), Decimal(0))
        paid = sum((d[7] for d in loc.days), Decimal(0))
        open_days = [d for d in loc.days if not d[9]]
        closed = "every day closed" if not open_days else \
            f'<span class="bad">{len(open_days)} days not closed</span>'
        name = names.get(loc.location_id, "")
        parts.append(f"""<section class="location" id="location-{loc.location_id}"
data-location="{loc.location_id}" data-days="{len(loc.days)}" data-revenue-total="{total}"
data-payment-total="{paid}"><h2>{loc.location_id} {esc(name)}</h2>
<p>{len(loc.days)} business days, {loc.days[0][0]} to {loc.days[-1][0]}: revenue
<strong class="revenue-total">{_money(total)}</strong>, payments {_money(paid)};
{closed}.</p>
{_chart(loc)}""")
        if loc.drift:
            parts.append("<h3>Source drift</h3><table><tr><th>business date</th>"
                         "<th>turnover before</th><th>after</th></tr>" + "".join(
                             f"<tr><td>{d}</td><td>{_money(b)}</td><td>{_money(a)}</td></tr>"
                             for d, b, a in loc.drift) + "</table>")
        parts.append("<h3>Daily close</h3><table class=\"close\"><tr><th>business date</th>"
                     "<th>receipts</th><th>revenue</th><th>net</th><th>VAT</th><th>tips</th>"
                     "<th>non-revenue</th><th>payments</th><th>difference</th><th></th></tr>")
        parts += [f"<tr><td>{d[0]}</td><td>{d[1]}</td><td>{_money(d[2])}</td>"
                  f"<td>{_money(d[3])}</td><td>{_money(d[4])}</td><td>{_money(d[5])}</td>"
                  f"<td>{_money(d[6])}</td><td>{_money(d[7])}</td><td>{_money(d[8])}</td>"
                  f"<td>{'closed' if d[9] else '<span class=bad>open</span>'}</td></tr>"
                  for d in reversed(loc.days)]
        parts.append("</table><h3>Payment mix</h3><table class=\"mix\"><tr><th>payment type"
                     "</th><th>account</th><th>amount</th><th>share</th></tr>")
        for kind, account, amount in loc.payments:
            share = float(amount / paid * 100) if paid else 0.0
            parts.append(f"<tr><td>{esc(kind)}</td><td>{esc(account)}</td>"
                         f"<td>{_money(amount)}</td><td><span class=bar style=\"width:"
                         f"{max(share, 0):.0f}%\"></span> {share:.1f} %</td></tr>")
        parts.append("</table></section>")
    parts.append('<section id="vouchers"><h2>Open voucher liability</h2><p>The ledger\'s '
                 'latest snapshot, all locations.</p><table><tr><th>category</th>'
                 '<th>open vouchers</th><th>outstanding</th></tr>')
    parts += [f"<tr><td>{esc(str(c))}</td><td>{n}</td><td>{_money(Decimal(cents) / 100)}</td>"
              f"</tr>" for c, n, cents in vouchers]
    if not vouchers:
        parts.append('<tr><td colspan="3">no voucher ledger loaded</td></tr>')
    parts.append("</table></section></body></html>\n")
    return "".join(parts)


_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 62rem;
       color: #1d2330; padding: 0 1rem; }
h1 { margin-bottom: .2rem; } h2 { margin-top: 2.5rem; border-bottom: 2px solid #dde3ee; }
.meta { color: #667; } .ok { color: #1a7f37; } .bad { color: #c62828; font-weight: 600; }
.alert { background: #fdecea; padding: .5rem 1rem; border-radius: 6px; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; font-size: 14px; }
th, td { padding: .25rem .5rem; border-bottom: 1px solid #eef1f6; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.chart { width: 100%; height: auto; background: #f8fafd; border-radius: 6px; }
.chart .line { fill: none; stroke: #2f6fde; stroke-width: 2.5; }
.chart .point { fill: #2f6fde; } .chart .axis { stroke: #b8c2d6; }
.chart text { font-size: 11px; fill: #667; }
.bar { display: inline-block; height: .7rem; background: #2f6fde; border-radius: 2px;
       vertical-align: middle; max-width: 8rem; }
"""


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
    rows = _rows(con, f"""
        select location_id, business_date, revenue_amount, vat_amount, tip_amount,
               payment_amount, difference_amount, is_closed
        from rpt_daily_close
        qualify row_number() over (partition by location_id
                                   order by business_date desc) <= {days}
        order by location_id, business_date""")
    lines = ["| location | business date | revenue | VAT | tips | payments | difference | |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    lines += [f"| {r[0]} | {r[1]} | {format_money(r[2])} | {format_money(r[3])} | "
              f"{format_money(r[4])} | {format_money(r[5])} | {format_money(r[6])} | "
              f"{'closed' if r[7] else '**open**'} |" for r in rows]
    return "\n".join(lines)
