"""The SQL macros of ``dbt_like_sql/macros/``: the spec's revenue rules and the money
arithmetic, written down once. Every warehouse has them (models, checks and analysts call
them), and a load computes its partitions' turnovers for their commit records with them
(a commit's partitions in one query), so the figure that drift detection and the build's
integrity check compare is the warehouse's own.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from functools import cache
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.core.project import MODELS_DIR
from pipeline.core.stops import stopped_query

PARTITION_TURNOVERS = """
    select items.part, sum(line_amount(items.net_amount, items.quantity))
    from items
    inner join receipts using (part, transaction_id)
    where is_revenue_effective(receipts.payment_group_name, receipts.transaction_type)
    group by items.part"""
"""Each partition's revenue-effective turnover (``part``: its position in the list asked
for): its lines' net times quantity, of the receipts the revenue rule counts (its tables
hold one version of each receipt)."""


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


def partition_turnovers(partitions: list[tuple[pa.Table, pa.Table]]) -> list[Decimal]:
    """The revenue-effective turnover of each partition's ``(receipts, items)``, exact: one
    query for all of them (a query a partition costs 1-2 ms; docs/benchmarks.md, peers)."""
    if not partitions:
        return []

    def tagged(table: pa.Table, columns: list[str], n: int) -> pa.Table:
        table = table.select(columns)
        return table.append_column("part", pa.repeat(pa.scalar(n, pa.int32()),
                                                      table.num_rows))

    # The query reads the tables by these names: DuckDB's replacement scan of Python
    # variables (a third cheaper than registering two views).
    receipts = pa.concat_tables(  # noqa: F841
        [tagged(r, ["transaction_id", "payment_group_name", "transaction_type"], n)
         for n, (r, _) in enumerate(partitions)])
    items = pa.concat_tables(  # noqa: F841
        [tagged(i, ["transaction_id", "net_amount", "quantity"], n)
         for n, (_, i) in enumerate(partitions)])
    with _cursor() as con:
        try:
            found = dict(con.execute(PARTITION_TURNOVERS).fetchall())
        except (duckdb.Error, RuntimeError) as exc:
            # a commit asks in the main thread, where DuckDB catches Ctrl-C itself
            if stopped_query(exc):
                raise KeyboardInterrupt("a turnover query was stopped") from None
            raise
    return [Decimal(0) if found.get(n) is None else Decimal(format(found[n].normalize(), "f"))
            for n in range(len(partitions))]
