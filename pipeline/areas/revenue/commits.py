"""A revenue partition as the lake commits it (``lake_batch``): its row, its turnover by
the revenue macros. Extraction returns tables and never touches the lake; the lake is
written here and never read back."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from pipeline.areas.revenue.extract import extract_revenue_partition
from pipeline.areas.revenue.macros import partition_turnovers
from pipeline.lake.store import Replacement

if TYPE_CHECKING:
    from pipeline.areas.revenue.extract import RevenuePartition


PROVISIONAL = "provisional"
"""The metadata key (value ``"true"``) of a revenue partition fetched before its business
day was over; a partition loaded once the day is over has none."""


def with_turnovers(parts: list[RevenuePartition]) -> list[RevenuePartition]:
    """``parts``, each one's ``turnover_net`` set where it is not yet (one query for all)."""
    todo = [part for part in parts if part.turnover_net is None]
    found = partition_turnovers([(p.tables["receipts"], p.tables["receipt_items"])
                                 for p in todo])
    for part, turnover in zip(todo, found, strict=True):
        part.turnover_net = turnover
    return parts


def lake_partition(part: RevenuePartition) -> Replacement:
    """The partition as the lake replaces it; its metadata keeps what drift checks and
    the warehouse's integrity check compare (its turnover computed here if not yet)."""
    with_turnovers([part])
    return Replacement(
        {"location_id": part.location_id, "business_date": part.business_date.isoformat()},
        part.tables,
        {"receipts": part.row_counts["receipts"], "receipts_seen": part.receipts_seen,
         "turnover_net": part.turnover_net} | ({PROVISIONAL: "true"} if part.provisional
                                               else {}))


def lake_batch(parts: list[RevenuePartition]) -> list[Replacement]:
    """The partitions as one commit replaces them: each one's row as the POS answered for
    its day (its turnover computed where it is not yet). Nothing is read back: a receipt
    the POS moved to another day stays in its old day's row until that day is loaded
    again (the nightly's lookback, the drift check); the warehouse counts it once, in its
    newest load (``pipeline.warehouse.lakeviews.superseded_receipts``: the one place of
    that rule)."""
    return [lake_partition(part) for part in with_turnovers(parts)]


def load_revenue_partition(source, lake, location_id: int, business_date: date
                           ) -> RevenuePartition:
    """Extract one partition and replace it in the lake (all four tables, one commit)."""
    return write_revenue_partition(lake, extract_revenue_partition(source, location_id,
                                                                   business_date))


def write_revenue_partition(lake, part: RevenuePartition) -> RevenuePartition:
    """Replace the partition in the lake by one commit (``lake_batch``)."""
    lake.write_batch("revenue", lake_batch([part]))
    return part
