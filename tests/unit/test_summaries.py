"""A step's summary goes into Dagster's metadata and comes back the same; a key missing on
the way back is an error, never a zero (what the CLI's summary reads)."""

from decimal import Decimal

import pytest

from pipeline.core.outcomes import ErrorKind, FailedPartition, Failure
from pipeline.orchestration.summaries import (
    DriftFound,
    LoadedCheck,
    ModelMaterialized,
    RevenueDay,
    SnapshotTaken,
)


@pytest.mark.parametrize("summary", [
    RevenueDay(12, Decimal("1234.56780000"), False, 1, 3, {"1002": "refused"},
               {"receipts.newField": 4}),
    RevenueDay(3, Decimal("9.10"), True, replaced_by="drift check"),
    SnapshotTaken("2026-11-20", {"products": 40, "product_localizations": 80}),
    DriftFound("2026-11-01..2026-11-07", 21, 2, 1),
    ModelMaterialized("/data/warehouse.duckdb", "main.fct_receipts", "partitioned", 3505, 9),
    ModelMaterialized("/data/warehouse.duckdb", "staging.stg_pos__receipts", "table"),
])
def test_a_summary_reads_back_as_it_was_written(summary):
    assert type(summary).from_metadata(summary.to_metadata(shown="for the UI")) == summary


def test_the_revenue_check_reads_back_with_its_failures():
    failed = [FailedPartition(1002, None, Failure(ErrorKind.REFUSED_KEY, "key refused"))]
    check = LoadedCheck(5, 2, failed, {1003: 5})
    from pipeline.orchestration.assets.metadata import failures_metadata

    assert LoadedCheck.from_metadata(check.to_metadata(failures_metadata(failed))) == check


def test_a_renamed_key_is_an_error_not_a_zero():
    written = RevenueDay(12, Decimal("10.00"), True).to_metadata()
    written["receipts"] = written.pop("dagster/row_count")
    with pytest.raises(KeyError):
        RevenueDay.from_metadata(written)


def test_a_warned_check_is_one_warn_line_however_many_partitions_it_names():
    """The summary counts warnings; each warning is one WARN line (its partitions listed
    below it), so the lines and the count agree."""
    from dataclasses import replace
    from datetime import date, timedelta

    from pipeline.orchestration.load_report import LoadReport
    from pipeline.orchestration.summaries import FailedCheck
    from pipeline.sqlrunner.checks import WHERE_LISTED, Where

    where = tuple(Where((("location_id", 1001),
                         ("business_date", date(2026, 10, 1) + timedelta(days=n))))
                  for n in range(WHERE_LISTED))
    check = FailedCheck("warehouse/rpt_daily_close: day_is_closed", "warn", 64, where)
    report = LoadReport("run", True, 31, warned_checks=[check])
    text = report.summary()
    assert text.count(" WARN ") == 1 and "result: OK, 1 warning" in text
    assert "WARN warehouse/rpt_daily_close: day_is_closed at 50+ partitions (64 rows in " \
           "all)" in text
    assert "at location 1001 business date 2026-10-01" in text and "and 45+ more" in text
    one = replace(check, failing_rows=1, where=where[:1])
    assert one.lines() == ["  WARN warehouse/rpt_daily_close: day_is_closed at location "
                           "1001 business date 2026-10-01 (1 row)"]


def test_a_failed_checks_sample_is_a_table_with_its_column_names():
    """The UI shows a failed check's sample rows as a table, not a Python repr."""
    from datetime import date

    from pipeline.orchestration.assets.warehouse import check_metadata
    from pipeline.sqlrunner.checks import CheckOutcome, DataCheck

    check = DataCheck("day_is_closed", "rpt_daily_close", "a day closes", "select 1")
    outcome = CheckOutcome(check, 2, [(1001, date(2026, 10, 2), Decimal("1789.83"))],
                           columns=("location_id", "business_date", "open_amount"))
    sample = check_metadata(outcome)["sample"].value
    assert sample.splitlines()[0] == "| location_id | business_date | open_amount |"
    assert "2026\\-10\\-02" in sample and "1789\\.83" in sample
    assert "datetime" not in sample and "Decimal" not in sample
