"""The SQL macros of ``dbt_like_sql/macros/``: the spec's revenue rules and the money
arithmetic, written down once. Every warehouse has them (models, checks and analysts call
them), and a load computes a partition's turnover for its commit record with them, so the
figure that drift detection and the build's integrity check compare is the warehouse's own.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from functools import cache
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.core.project import MODELS_DIR

PARTITION_TURNOVER = """
    select sum(line_amount(items.net_amount, items.quantity))
    from items
    inner join receipts using (transaction_id)
    where is_revenue_effective(receipts.payment_group_name, receipts.transaction_type)"""
"""A partition's revenue-effective turnover: its lines' net times quantity, of the receipts
the revenue rule counts (its tables hold one version of each receipt)."""


def macro_sql(models_dir: Path = MODELS_DIR) -> list[str]:
    """The ``create macro`` statements of ``macros/``, in file name order."""
    return [path.read_text(encoding="utf-8")
            for path in sorted((models_dir / "macros").glob("*.sql"))]


_CURSORS = threading.Lock()


@cache
def _macros() -> duckdb.DuckDBPyConnection:
    """An in-memory database that has the macros (made once; each use takes a cursor)."""
    con = duckdb.connect()
    con.execute("set threads = 1")  # a partition's tables are small
    for sql in macro_sql():
        con.execute(sql)
    return con


def _cursor() -> duckdb.DuckDBPyConnection:
    """A connection of its own to the macros' database (a load's threads each take one)."""
    with _CURSORS:
        return _macros().cursor()


def partition_turnover(receipts: pa.Table, items: pa.Table) -> Decimal:
    """The revenue-effective turnover of one partition's receipts and items, exact."""
    if not items.num_rows:
        return Decimal(0)
    # The query reads the tables by these names: DuckDB's replacement scan of Python
    # variables (a third cheaper than registering two views per partition).
    receipts = receipts.select(["transaction_id", "payment_group_name", "transaction_type"])
    items = items.select(["transaction_id", "net_amount", "quantity"])  # noqa: F841
    with _cursor() as con:
        total = con.execute(PARTITION_TURNOVER).fetchall()[0][0]
    return Decimal(0) if total is None else Decimal(format(total.normalize(), "f"))
