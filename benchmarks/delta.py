"""The lake's Delta tables measured (``benchmarks/run.py --only delta``; part of ``make bench``).

- **conversion**: a lake of an older version (commit records and files, no Delta logs) of
  3 locations x 365 days (1,095 partitions, made like the chain's: the sandbox's
  generator, the pipeline's own flattening and commits, no HTTP) is built; then the
  first publication (``Lake.sync``, what the next load or build does) writes every
  table's log from the records, without rewriting a file. Measured: its seconds and the
  files and log entries it leaves. Checked: the turnover a Delta reader (Polars) computes
  per day with the revenue rule equals the warehouse's, and a build after the conversion
  publishes the same figures as before it.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from datetime import date
from pathlib import Path

from benchmarks.chain import write_days

LOCATIONS = (1001, 1002, 1003)
FIRST_DAY = date(2025, 6, 1)
VOLUME = 300


def _turnover(warehouse: Path) -> dict:
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        return dict(con.execute("select business_date, sum(turnover_net) "
                                "from fct_turnover_daily group by 1").fetchall())


def _delta_turnover(lake: Path) -> dict:
    """Per day, the revenue rule over what Polars reads of the Delta tables."""
    import duckdb
    import polars as pl

    from pipeline.extract.macros import macro_sql

    with duckdb.connect() as con:
        for sql in macro_sql():
            con.execute(sql)
        con.register("r", pl.read_delta(str(lake / "receipts")).to_arrow())
        con.register("i", pl.read_delta(str(lake / "receipt_items")).to_arrow())
        return dict(con.execute("""
            select i.business_date, sum(line_amount(i.net_amount, i.quantity))
            from i join r using (location_id, business_date, transaction_id)
            where is_revenue_effective(r.payment_group_name, r.transaction_type)
            group by all""").fetchall())


def bench_delta_conversion(days: int) -> dict:
    from pipeline.lake.store import LOADS_DIR, UNPUBLISHED_DIR, Lake
    from pipeline.warehouse import build_warehouse

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "lake"
        t0 = time.perf_counter()
        for location_id in LOCATIONS:
            write_days((str(root), location_id, FIRST_DAY, days, VOLUME))
        made = time.perf_counter() - t0
        # As a lake of the version before Delta: records and files, no logs, no markers.
        shutil.rmtree(root / LOADS_DIR / UNPUBLISHED_DIR)
        assert not list(root.glob("*/_delta_log"))
        warehouse = Path(tmp) / "warehouse.duckdb"
        build_warehouse(root, warehouse)
        before = _turnover(warehouse)
        t0 = time.perf_counter()
        published = Lake(root).sync()
        seconds = time.perf_counter() - t0
        build_warehouse(root, warehouse)
        after = _turnover(warehouse)
        delta = _delta_turnover(root)
        logs = list(root.glob("*/_delta_log/*.json"))
    return {"partitions": len(LOCATIONS) * days, "lake_make_seconds": round(made, 1),
            "published_partitions": published, "conversion_seconds": round(seconds, 2),
            "log_entries": len(logs),
            "turnover_unchanged": before == after == delta and len(before) == days,
            "turnover_net": str(sum(after.values()))}
