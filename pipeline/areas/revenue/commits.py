"""A revenue partition as the lake commits it: its row and the rows of other days that
hold a receipt the POS moved to a day now loaded (``lake_batch``), its turnover by the
revenue macros. Extraction returns tables and never touches the lake; the lake is written
here, and read back only to find the moved receipts."""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.areas.revenue.extract import extract_revenue_partition
from pipeline.areas.revenue.macros import partition_turnover, partition_turnovers
from pipeline.areas.revenue.tables import REVENUE_TABLES
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


MOVED_WINDOW_DAYS = 7
"""How far from a loaded day a receipt the POS moved to it is looked for in the lake (the
days before and after): its older version leaves its old day's row in the same commit
(``lake_batch``). The spec does not say how far a correction may move a receipt; one
moved further is counted once by the warehouse all the same (its receipt keys span the
history), but a reader of the lake's rows sees it twice until the old day is loaded
again (docs/source-api.md)."""


def lake_batch(lake, parts: list[RevenuePartition]) -> list[Replacement]:
    """The partitions as one commit replaces them, and the rows of other days of their
    locations (within ``MOVED_WINDOW_DAYS``) that hold a receipt now loaded on another
    day: rewritten without it, its lines, side dishes and payments, their figures
    computed again. So every reader of the lake counts a moved receipt once, in its
    newest load."""
    batch = [lake_partition(part) for part in with_turnovers(parts)]
    table = lake.area_table("revenue")
    if table is None:
        return batch
    loaded = {(part.location_id, part.business_date) for part in parts}
    ids: dict[int, set[str]] = {}
    for part in parts:
        ids.setdefault(part.location_id, set()).update(
            part.tables["receipts"].column("transaction_id").to_pylist())
    nearby = sorted({(loc, day + timedelta(days=k)) for loc, day in loaded
                     for k in range(-MOVED_WINDOW_DAYS, MOVED_WINDOW_DAYS + 1)} - loaded)
    if not nearby:
        return batch
    snapshot = table.snapshot()
    rows = snapshot.nested_field("receipts", "transaction_id", [
        {"location_id": loc, "business_date": day} for loc, day in nearby])
    if not rows.num_rows:
        return batch
    receipts = rows.column("receipts").combine_chunks()
    held = pc.struct_field(pc.list_flatten(receipts), "transaction_id").to_pylist()
    owners = pc.list_parent_indices(receipts).to_pylist()
    locations = rows.column("location_id").to_pylist()
    days = rows.column("business_date").to_pylist()
    moved: dict[tuple[int, date], set[str]] = {}
    for txn, row in zip(held, owners, strict=True):
        if txn in ids.get(locations[row], ()):
            moved.setdefault((locations[row], days[row]), set()).add(txn)
    for (loc, day), txns in sorted(moved.items()):
        partition = {"location_id": loc, "business_date": day.isoformat()}
        record = snapshot.records([partition])[partition_key_path(loc, day)]
        gone = pa.array(sorted(txns), pa.string())
        tables = {name: (t := snapshot.read(name, partition)).filter(
            pc.invert(pc.is_in(t.column("transaction_id"), value_set=gone)))
            for name in REVENUE_TABLES}
        metadata = dict(record.metadata)
        metadata["receipts"] = tables["receipts"].num_rows
        metadata["turnover_net"] = partition_turnover(tables["receipts"],
                                                      tables["receipt_items"])
        metadata["moved_out"] = ",".join(sorted(txns))
        batch.append(Replacement(partition, tables, metadata))
    return batch


def partition_key_path(location_id: int, day: date) -> str:
    return f"location_id={location_id}/business_date={day.isoformat()}"


def load_revenue_partition(source, lake, location_id: int, business_date: date
                           ) -> RevenuePartition:
    """Extract one partition and replace it in the lake (all four tables, one commit)."""
    return write_revenue_partition(lake, extract_revenue_partition(source, location_id,
                                                                   business_date))


def write_revenue_partition(lake, part: RevenuePartition) -> RevenuePartition:
    """Replace the partition in the lake by one commit (``lake_batch``)."""
    lake.write_batch("revenue", lake_batch(lake, [part]))
    return part
