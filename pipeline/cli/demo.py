"""``make demo``: the whole product on the built-in sandbox, end to end."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import duckdb

from pipeline.orchestration.configs import SANDBOX_DATA_DIR, sandbox_settings
from pipeline.orchestration.loader import run_load


def _table(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    return str(con.sql(sql))


def run_demo(data_dir: str | Path = SANDBOX_DATA_DIR, days: int = 7,
             today: date | None = None) -> int:
    """Load the last ``days`` business dates of the sandbox's locations and show the result."""
    today = today or date.today()
    start, end = today - timedelta(days=days), today - timedelta(days=1)
    settings = sandbox_settings(data_dir, start)  # its history: what it loads
    print(f"pos-etl demo: sandbox locations "
          f"{', '.join(str(loc.id) for loc in settings.locations)}, "
          f"business dates {start} .. {end}\n", flush=True)
    report = run_load(settings, start, end)
    print()
    print(report.summary())
    if not report.warehouse_path:
        return 1
    path = Path(report.warehouse_path).resolve()
    with duckdb.connect(str(path), read_only=True) as con:
        print("\nThe spec's turnover per location and day (fct_turnover_daily, EUR to the "
              "cent; turnover_net is net and before receipt discounts, spec 2.2):")
        print(_table(con, """
            select location_id, business_date, revenue_receipt_count as receipts,
                   turnover_net_rounded as turnover_net, turnover_gross_rounded as
                   turnover_gross, tip_amount_rounded as tips,
                   discount_amount_rounded as discounts
            from fct_turnover_daily order by location_id, business_date"""))
        print("Daily close per location (EUR; a day is closed when its payments cover "
              "revenue, tips and non-revenue settlements):")
        print(_table(con, """
            select location_id,
                   count(*) as days,
                   sum(revenue_amount) as revenue_after_discounts,
                   sum(vat_amount) as vat,
                   sum(tip_amount) as tips,
                   sum(payment_amount) as payments,
                   count(*) filter (where not is_closed) as days_not_closed
            from rpt_daily_close group by location_id order by location_id"""))
    from pipeline.outputs.report import location_names, write_report

    page = Path(data_dir) / "report" / "index.html"
    write_report(path, page, location_names(settings), settings=settings)
    print(f"Report:    file://{page.resolve()}   (open it in a browser)")
    print(f"Warehouse: {path}")
    print(f"Query it:  .venv/bin/python -c \"import duckdb; "
          f"print(duckdb.connect('{path}', read_only=True).sql('from fct_turnover_daily'))\"")
    print("Dagster UI: make dev   (then open http://127.0.0.1:3000)")
    return 0 if report.ok else 1
