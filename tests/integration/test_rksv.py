"""The Austrian RKSV's legal receipts: a location whose till did not make its Monatsbeleg
(or Jahresbeleg) gets a warning naming the check; the others do not."""

from __future__ import annotations

from datetime import date

import duckdb

from pipeline.core.reporting import Reporter
from pos_sandbox.app import SandboxConfig
from pos_sandbox.receipts import SandboxData
from pos_sandbox.server import running_sandbox
from tests.conftest import make_settings, run_load_in_memory

MONTHLY = "warehouse/rpt_rksv_receipts: monthly_receipt_present"
ANNUAL = "warehouse/rpt_rksv_receipts: annual_receipt_present"


def _months(settings) -> dict:
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        return {(loc, month): (monthly, annual) for loc, month, monthly, annual in con.execute(
            "select location_id, strftime(month_start, '%Y-%m'), monthly_receipts, "
            "annual_receipts from rpt_rksv_receipts where is_month_end_loaded").fetchall()}


def test_a_missing_monatsbeleg_or_jahresbeleg_is_a_warning(tmp_path, sandbox_keys):
    omitted = ((1001, date(2026, 10, 31), "Monatsbeleg"),
               (1002, date(2025, 12, 31), "JahresBeleg"))
    data = SandboxData(omitted=omitted)
    with running_sandbox(SandboxConfig(data=data)) as url:
        settings = make_settings(url, tmp_path / "data")

        def load(start, end):
            report = run_load_in_memory(settings, start, end, [1001, 1002], catalog=False,
                                        progress=Reporter())
            assert report.ok, report.summary()  # a warning is not a failure
            return sorted((c.name, c.failing_rows) for c in report.warned_checks
                          if "rpt_rksv_receipts" in c.name)

        # December 2025 ends with a Jahresbeleg, checked by 15 February: not due before
        assert load(date(2025, 12, 31), date(2026, 1, 1)) == []
        assert load(date(2026, 2, 15), date(2026, 2, 15)) == [(ANNUAL, 1)]
        # October 2026 ends with a Monatsbeleg (made on 1 November, after midnight)
        assert load(date(2026, 10, 31), date(2026, 11, 1)) == [(ANNUAL, 1), (MONTHLY, 1)]
    assert _months(settings) == {(1001, "2025-12"): (1, 1), (1002, "2025-12"): (1, 0),
                                 (1001, "2026-10"): (0, 0), (1002, "2026-10"): (1, 0)}
