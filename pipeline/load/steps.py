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
from errno import ENOSPC

from pipeline.areas.revenue.commits import PROVISIONAL, lake_batch
from pipeline.areas.revenue.extract import (
    RevenuePartition,
    extract_revenue_partition,
    make_tables,
    tables_due,
)
from pipeline.core.outcomes import ConfigError, ErrorKind, Failure
from pipeline.core.untrusted import one_line
from pipeline.extract.keys import refuse_keys
from pipeline.extract.snapshots import Files, Snapshot
from pipeline.lake.log_check import LakeUnreadable
from pipeline.lake.objectlake import ObjectLakeError
from pipeline.lake.store import LakeStore, Replacement, partition_path
from pipeline.pos_api.errors import PosApiError, TransientError, Unreachable
from pipeline.pos_api.source import PosSource

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
    overtook: str | None = None
    """Another load's copy of this partition, committed while this one committed it
    (another process loading the same location and day): this later commit replaced it
    whole (its load id)."""
    kept: bool = False
    """Committed before and not fetched again (a load of the missing partitions only)."""
    provisional: bool = False
    """Loaded before its business day was over (``RevenuePartition.provisional``)."""


def kept_partitions(lake: LakeStore, jobs: list[tuple[date, int]]
                    ) -> dict[tuple[date, int], PartitionOutcome]:
    """The partitions of ``jobs`` (day, location) committed before, as outcomes (counts
    from their load's metadata), read from the lake's newest version at once."""
    try:
        records = lake.records("revenue", [partition_key(loc, day) for day, loc in jobs])
    except (ObjectLakeError, LakeUnreadable):  # the store cannot tell: loaded, failing by name
        return {}
    kept = {}
    for day, loc in jobs:
        record = records.get(partition_path(partition_key(loc, day)))
        # a partition loaded before its day was over is loaded again (it is not final)
        if record is not None and "receipts" in record.metadata \
                and PROVISIONAL not in record.metadata:
            kept[(day, loc)] = PartitionOutcome(
                loc, day, receipts=int(record.metadata["receipts"]),
                turnover_net=Decimal(record.metadata["turnover_net"]), kept=True)
    return kept


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


def _outcome(source: PosSource, part: RevenuePartition) -> PartitionOutcome:
    return PartitionOutcome(
        part.location_id, part.business_date, receipts=part.row_counts["receipts"],
        pages=part.stats.pages, retries=part.stats.retries,
        duplicates_dropped=sum(part.duplicates_dropped.values()), outside_day=part.outside_day,
        unknown_types=_redacted_counts(part.unknown_types, source.redact),
        unknown_fields=_redacted_counts(part.unknown_fields, source.redact),
        provisional=part.provisional)


def _commit(source: PosSource, lake: LakeStore,
            parts: list[RevenuePartition]) -> list[PartitionOutcome]:
    """The batch into the lake by one commit (its partitions' tables made); its outcomes
    (each failed, by the store's error, when the commit failed)."""
    batch = [(part, _outcome(source, part)) for part in parts]
    try:
        committed = lake.write_batch("revenue", lake_batch([part for part, _ in batch]))
    except (ObjectLakeError, LakeUnreadable) as exc:
        failure = Failure(ErrorKind.STORAGE, source.redact(str(exc)))
        return [PartitionOutcome(o.location_id, o.business_date, failure=failure)
                for _, o in batch]
    except OSError as exc:  # a full disk, a lost mount: every further write would fail too
        first = min((o for _, o in batch), key=lambda o: (o.business_date, o.location_id))
        errno, reason = exc.errno, (exc.strerror or one_line(str(exc))).lower()
        if errno is None and "(os error 28)" in reason:  # delta-rs' word for a full disk
            errno, reason = ENOSPC, "no space left on device"
        raise OSError(errno, f"{reason} writing location "
                                 f"{first.location_id}'s revenue of {first.business_date} "
                                 f"(and {len(batch) - 1} more partitions) to the lake "
                                 f"{lake.describe()}; the dates reported done are "
                                 "committed: once it is fixed, the same command with "
                                 "--missing-only loads the rest") from None
    for part, outcome in batch:  # the commit computed the turnovers (one query)
        outcome.turnover_net = part.turnover_net
        outcome.overtook = committed.overtook.get(
            partition_path(partition_key(outcome.location_id, outcome.business_date)))
    return [outcome for _, outcome in batch]


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

    def complete() -> Iterator[DayOutcome]:
        for day in [day for day in done if not pending[day]]:
            yield _day(lake, day, done.pop(day), location_ids, configured_ids)

    if missing_only:
        kept = kept_partitions(lake, [(day, loc) for day, loc, _ in jobs])
        jobs = [(day, loc, n) for day, loc, n in jobs if (day, loc) not in kept]
        for (day, _), outcome in kept.items():
            done[day].append(outcome)
            pending[day] -= 1
        yield from complete()
    jobs.reverse()  # popped from the end: earliest day first
    workers = max(1, min(len(jobs), PARTITIONS_PER_REQUEST_SLOT
                         * source.settings.source.max_concurrent_requests))
    batch: list[RevenuePartition] = []
    opened = time.monotonic()
    # bounded batches: [lake] commit_partitions, commit_seconds
    most, seconds = (source.settings.lake.commit_partitions,
                     source.settings.lake.commit_seconds)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="revenue") as pool:
        running: dict = {}

        def submit_next() -> None:
            if jobs:
                day, loc, attempt = jobs.pop()
                running[pool.submit(extract_revenue_partition, source, loc, day,
                                    defer=True)] = (day, loc, attempt)

        def record(outcome: PartitionOutcome) -> None:
            done[outcome.business_date].append(outcome)
            pending[outcome.business_date] -= 1

        def make() -> None:
            """The batch's tables made at once; a partition that fails leaves it."""
            nonlocal batch
            errors = make_tables(source, batch)
            for part, error in zip(batch, errors, strict=True):
                if error is not None:
                    record(PartitionOutcome(part.location_id, part.business_date,
                                            failure=Failure.of(error, source.redact)))
            batch = [p for p, e in zip(batch, errors, strict=True) if e is None]

        def commit() -> None:
            nonlocal batch
            make()
            for outcome in _commit(source, lake, batch) if batch else []:
                record(outcome)
            batch = []

        for _ in range(workers):
            submit_next()
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED,
                               timeout=max(0.0, opened + seconds - time.monotonic())
                               if batch else None)
            for future in finished:
                day, loc, attempt = running.pop(future)
                try:
                    part = future.result()
                except TransientError as exc:
                    if attempt < PARTITION_ATTEMPTS and not isinstance(exc, Unreachable):
                        jobs.insert(0, (day, loc, attempt + 1))
                        submit_next()
                        continue
                    outcome = PartitionOutcome(loc, day, failure=Failure.of(exc, source.redact))
                except (PosApiError, ConfigError) as exc:
                    outcome = PartitionOutcome(loc, day, failure=Failure.of(exc, source.redact))
                else:
                    if not batch:
                        opened = time.monotonic()
                    batch.append(part)
                    if tables_due(batch):
                        make()
                    outcome = None
                if outcome is not None:
                    record(outcome)
                submit_next()
                # never more than commit_partitions at once, however many finished together,
                # and the days a commit completes are reported before the next commit: what
                # a killed load committed and did not report is one commit's at most
                if len(batch) >= most:
                    commit()
                    yield from complete()
            if batch and (not running or time.monotonic() - opened >= seconds):
                commit()
            yield from complete()


def _day(lake: LakeStore, day: date, outcomes: list[PartitionOutcome], location_ids: list[int],
         configured_ids: list[int]) -> DayOutcome:
    missing = _missing(lake, [c for c in configured_ids if c not in location_ids], day)
    return DayOutcome(day, sorted(outcomes, key=lambda o: o.location_id), missing)


def _missing(lake: LakeStore, others: list[int], day: date) -> list[int]:
    """The locations outside this load that have no revenue of ``day`` yet (a note in the
    summary); none when the lake cannot tell (a store that is down fails the load's own
    partitions by name already)."""
    if not others:
        return []
    try:
        found = lake.records("revenue", [partition_key(c, day) for c in others])
    except (ObjectLakeError, LakeUnreadable):
        return []
    return [c for c in others if partition_path(partition_key(c, day)) not in found]


def partition_key(location_id: int, day: date) -> dict[str, object]:
    """The lake partition of one location's revenue of one business date."""
    return {"location_id": location_id, "business_date": day.isoformat()}


@dataclass
class SnapshotOutcome:
    location_id: int | None
    snapshot: Snapshot | None = None
    failure: Failure | None = None


def take_snapshots(extract: Callable[..., Snapshot | Files | None], source: PosSource,
                   lake: LakeStore, location_ids: list[int], day: date,
                   area: str) -> list[SnapshotOutcome]:
    """One snapshot per location (``extract(source, location_id, day)``), failures kept,
    or for a file source every partition its files hold (a refused file a failure by its
    name); then all of them committed together, ``[lake] commit_partitions`` a commit:
    200 locations' catalogs are a few commits and a file per date, not 200 of each. A
    commit that fails on the store fails every snapshot it held, by name."""
    outcomes, taken = [], []
    for loc in location_ids:
        try:
            found = extract(source, loc, day)
            if isinstance(found, Files):
                outcomes += [SnapshotOutcome(loc, failure=Failure(
                    ErrorKind.CONTRACT, source.redact(why))) for why in found.refused.values()]
                parts = found.snapshots
            else:
                parts = [found] if found is not None else []
            for snapshot in parts:
                refuse_keys(source, snapshot.tables, f"{area} snapshot of "
                            f"{'location ' + str(loc) if loc is not None else 'the tenant'} "
                            f"on {day}", loc)
            taken += parts
            outcomes += [SnapshotOutcome(s.location_id if s.keys else loc, s) for s in parts]
        except (PosApiError, ConfigError, OSError) as exc:
            outcomes.append(SnapshotOutcome(loc, failure=Failure.of(exc, source.redact)))
    most = source.settings.lake.commit_partitions
    try:
        for start in range(0, len(taken), most):
            lake.write_batch(area, [Replacement(s.partition, s.tables)
                                    for s in taken[start:start + most]])
    except ObjectLakeError as exc:
        failure = Failure.of(exc, source.redact)
        outcomes = [o if o.failure else SnapshotOutcome(o.location_id, failure=failure)
                    for o in outcomes]
    return outcomes


def commit_snapshot(lake, area: str, snapshot: Snapshot) -> Snapshot:
    """A snapshot's tables replace its partition of ``area`` (one commit); its ``version``
    is the lake table's version that committed it."""
    snapshot.version = lake.write(area, snapshot.tables, snapshot.partition).version
    return snapshot
