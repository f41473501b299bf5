"""`pos-etl trace` names what it cannot trace in one line (the trail itself is tested on
a built warehouse in tests/integration/test_accounting.py)."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.accounting.trace import TraceError, trace


def test_a_warehouse_without_the_trail_asks_for_a_build(tmp_path):
    path = tmp_path / "warehouse.duckdb"
    duckdb.connect(str(path)).close()
    with pytest.raises(TraceError, match=r"built by an older pos-etl \(it has no "
                                         r"rpt_booking_receipts\): run `pos-etl build`"):
        trace(path, "Z1001-20260327")
