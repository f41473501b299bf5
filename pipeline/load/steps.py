"""The steps of a load, each written once; the Dagster assets call them, and only they do.

- ``load_revenue_days``: every (location, business date) revenue partition of some days,
  a few partitions in flight, each day reported once all its locations are done.
- ``take_snapshots``: a catalog, menu or voucher snapshot of each location, today.
- The warehouse build and its checks: ``pipeline.warehouse.Warehouse.build``.

A failing partition or location never stops the others: its error is kept in the outcome
and the caller decides (the assets report it as a failed check and leave the day
unmaterialized).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from pipeline.core.outcomes import ConfigError, Failure
from pipeline.extract.revenue import load_revenue_partition
from pipeline.extract.snapshots import Snapshot
from pipeline.lake.objectlake import ObjectLakeError
from pipeline.lake.store import LakeStore
from pipeline.pos_api.errors import PosApiError, TransientError, Unreachable
from pipeline.pos_api.source import PosSource

PUBLISH_SECONDS = 60.0
"""How long a load commits partitions before the tables' Delta logs take them, together
(``Lake.publish``). A Delta commit reads the table's whole snapshot, so its cost grows
with the history: about 0.02 s per table on a new lake, 0.8 s with 3 years of 200
locations (219,000 files; a night's ten table publications 8 s,
``benchmarks/housekeeping.py``). A load publishes what it committed when it ends, too."""
PARTITION_ATTEMPTS = 2
"""A partition whose requests outlasted the client's retries is tried once more, last."""
PARTITIONS_PER_REQUEST_SLOT = 2
"""Partitions in progress per request the POS may have in flight: while one partition is
flattened and written (no request), another one's request keeps the slot busy. A year of 3
locations loads about 12 % faster than with one partition per slot (the sandbox, 2 cores)."""


@dataclass
class PartitionOutcome:
    """One location's revenue report of one business date, loaded or not."""

    location_id: int
    business_date: date
    receipts: int = 0
    turnover_net: Decimal = Decimal(0)
    pages: int = 0
    retries: int = 0
    duplicates_dropped: int = 0
    outside_day: int = 0
    """Receipts of the window's margin (the neighbouring business days'), skipped."""
    unknown_types: dict[str, int] = field(default_factory=dict)
    unknown_fields: dict[str, int] = field(default_factory=dict)
    """Fields the spec does not name (``table.field``: rows), kept in ``extra_fields``."""
    failure: Failure | None = None
    kept: bool = False
    """Committed before and not fetched again (a load of the missing partitions only)."""


def kept_partition(lake: LakeStore, location_id: int, day: date) -> PartitionOutcome | None:
    """The partition's committed load as an outcome (counts from its commit record), or
    None when it was never committed."""
    try:
        record = lake.committed("revenue", partition_key(location_id, day))
    except ObjectLakeError:  # the store cannot tell: the partition is loaded, and fails by name
        return None
    if record is None or "receipts" not in record.metadata:
        return None
    return PartitionOutcome(location_id, day, receipts=int(record.metadata["receipts"]),
                            turnover_net=Decimal(record.metadata["turnover_net"]), kept=True)


@dataclass
class DayOutcome:
    """Every requested location of one business date, and the configured ones still missing."""

    business_date: date
    partitions: list[PartitionOutcome]
    missing: list[int] = field(default_factory=list)
    """Configured locations not loaded now whose partition of the day is not in the lake."""

    @property
    def failed(self) -> list[PartitionOutcome]:
        return [p for p in self.partitions if p.failure]

    @property
    def complete(self) -> bool:
        return not self.failed and not self.missing


def _redacted_counts(counts: dict[str, int], redact: Callable[[str], str]) -> dict[str, int]:
    """POS strings counted (transaction types, field names) as they may be shown: redacted
    here, before anything escapes or shortens them for metadata, logs or the summary."""
    out: dict[str, int] = {}
    for text, n in counts.items():
        shown = redact(text)
        out[shown] = out.get(shown, 0) + n
    return out


def _load_one(source: PosSource, lake: LakeStore, location_id: int, day: date) -> PartitionOutcome:
    try:
        part = load_revenue_partition(source, lake, location_id, day, publish=False)
    except OSError as exc:  # a full disk, a lost mount: every further write would fail too
        raise OSError(exc.errno, f"{(exc.strerror or str(exc)).lower()} writing location "
                                 f"{location_id}'s revenue of {day} to the lake "
                                 f"{lake.describe()}; the dates reported done are "
                                 "committed: once it is fixed, the same command with "
                                 "--missing-only loads the rest") from None
    return PartitionOutcome(
        location_id, day, receipts=part.row_counts["receipts"], turnover_net=part.turnover_net,
        pages=part.stats.pages, retries=part.stats.retries,
        duplicates_dropped=sum(part.duplicates_dropped.values()), outside_day=part.outside_day,
        unknown_types=_redacted_counts(part.unknown_types, source.redact),
        unknown_fields=_redacted_counts(part.unknown_fields, source.redact))


def load_revenue_days(source: PosSource, lake: LakeStore, days: list[date], location_ids: list[int],
                      configured_ids: list[int] | None = None,
                      missing_only: bool = False) -> Iterator[DayOutcome]:
    """Load every (location, day) partition; yield each day as soon as it is done.

    With ``missing_only`` a partition already committed in the lake is not fetched again
    (a long load resumed after it was killed): its outcome comes from its commit record.

    At most ``max_concurrent_requests`` requests are in flight (the source's request
    slots) and up to ``PARTITIONS_PER_REQUEST_SLOT`` times as many partitions in progress,
    so the POS always has requests to answer while finished partitions are flattened and
    written. Each result is dropped once its day is reported, so memory is bounded by a
    few partitions however long the range is. A partition that failed on a transient
    error (the POS stayed unavailable through the client's retries) is tried once more
    after the others.
    """
    configured_ids = configured_ids or location_ids
    yield from _load_days(source, lake, days, location_ids, configured_ids, missing_only)


def _load_days(source: PosSource, lake: LakeStore, days: list[date], location_ids: list[int],
               configured_ids: list[int], missing_only: bool) -> Iterator[DayOutcome]:
    jobs = [(day, loc, 1) for day in days for loc in location_ids]
    pending = {day: len(location_ids) for day in days}
    done: dict[date, list[PartitionOutcome]] = {day: [] for day in days}
    if missing_only:
        kept = {(day, loc): kept_partition(lake, loc, day) for day, loc, _ in jobs}
        jobs = [(day, loc, n) for day, loc, n in jobs if kept[(day, loc)] is None]
        for (day, _), outcome in kept.items():
            if outcome is not None:
                done[day].append(outcome)
                pending[day] -= 1
        for day in [day for day in days if not pending[day]]:
            yield _day(lake, day, done.pop(day), location_ids, configured_ids)
    jobs.reverse()  # popped from the end: earliest day first
    workers = max(1, min(len(jobs), PARTITIONS_PER_REQUEST_SLOT
                         * source.settings.source.max_concurrent_requests))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="revenue") as pool:
        running: dict = {}

        def submit_next() -> None:
            if jobs:
                day, loc, attempt = jobs.pop()
                running[pool.submit(_load_one, source, lake, loc, day)] = (day, loc, attempt)

        for _ in range(workers):
            submit_next()
        published, unpublished = time.monotonic(), 0  # partitions committed since
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                day, loc, attempt = running.pop(future)
                try:
                    outcome = future.result()
                    unpublished += 1
                except TransientError as exc:
                    if attempt < PARTITION_ATTEMPTS and not isinstance(exc, Unreachable):
                        jobs.insert(0, (day, loc, attempt + 1))
                        submit_next()
                        continue
                    outcome = PartitionOutcome(loc, day, failure=Failure.of(exc, source.redact))
                except (PosApiError, ConfigError, ObjectLakeError) as exc:
                    outcome = PartitionOutcome(loc, day, failure=Failure.of(exc, source.redact))
                done[day].append(outcome)
                pending[day] -= 1
                if not pending[day]:
                    if unpublished and time.monotonic() - published > PUBLISH_SECONDS:
                        lake.publish("revenue")
                        published, unpublished = time.monotonic(), 0
                    yield _day(lake, day, done.pop(day), location_ids, configured_ids)
                submit_next()
    if unpublished:  # none committed, none to publish (a store that is down would fail it)
        lake.publish("revenue")


def _day(lake: LakeStore, day: date, outcomes: list[PartitionOutcome], location_ids: list[int],
         configured_ids: list[int]) -> DayOutcome:
    missing = _missing(lake, [c for c in configured_ids if c not in location_ids], day)
    return DayOutcome(day, sorted(outcomes, key=lambda o: o.location_id), missing)


def _missing(lake: LakeStore, others: list[int], day: date) -> list[int]:
    """The locations outside this load that have no revenue of ``day`` yet (a note in the
    summary); none when the lake cannot tell (a store that is down fails the load's own
    partitions by name already)."""
    try:
        return [c for c in others if not lake.has("revenue", partition_key(c, day))]
    except ObjectLakeError:
        return []


def partition_key(location_id: int, day: date) -> dict[str, object]:
    """The lake partition of one location's revenue of one business date."""
    return {"location_id": location_id, "business_date": day.isoformat()}


@dataclass
class SnapshotOutcome:
    location_id: int | None
    snapshot: Snapshot | None = None
    failure: Failure | None = None


def take_snapshots(load: Callable[..., Snapshot], source: PosSource, lake: LakeStore,
                   location_ids: list[int], day: date, area: str) -> list[SnapshotOutcome]:
    """One snapshot per location (``load(source, lake, location_id, day, publish=False)``),
    failures kept; then the snapshots into ``area``'s Delta logs together."""
    outcomes = []
    for loc in location_ids:
        try:
            outcomes.append(SnapshotOutcome(loc, load(source, lake, loc, day, publish=False)))
        except (PosApiError, ConfigError, ObjectLakeError) as exc:
            outcomes.append(SnapshotOutcome(loc, failure=Failure.of(exc, source.redact)))
    if any(o.snapshot for o in outcomes):
        lake.publish(area)
    return outcomes
