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
