"""What each step of a run records, as typed values: written into Dagster's metadata by
``to_metadata`` and read back by ``from_metadata`` (the summary of ``pos-etl load``,
``pipeline.orchestration.load_report.LoadReport``), so each key is named once, here. A key
renamed on one side cannot read as zero on the other: ``from_metadata`` raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

import dagster as dg

from pipeline.core.outcomes import FAILURES_KEY, FailedPartition, read_failures
from pipeline.sqlrunner.checks import WHERE_LISTED, Where
from pipeline.warehouse.lake_tables import PARTITION_KEYS

ROW_COUNT = "dagster/row_count"
"""Dagster's own key for the rows an event wrote (the UI shows it)."""


def values(metadata: Mapping[str, object]) -> dict[str, object]:
    """An event's metadata with Dagster's wrappers taken off."""
    return {k: getattr(v, "value", v) for k, v in metadata.items()}


@dataclass(frozen=True)
class RevenueDay:
    """One business date of ``lake/revenue``: what its partitions hold now."""

    receipts: int
    turnover_net: Decimal
    complete: bool
    """Every location the run loads has the date, and no configured one is missing."""
    partitions_kept: int = 0
    """Committed before and not fetched again (``--missing-only``)."""
    pages: int = 0
    failed_locations: dict[str, str] = field(default_factory=dict)
    unknown_fields: dict[str, int] = field(default_factory=dict)
    replaced_by: str = ""
    """Empty for a load's date; ``drift check`` where the drift check replaced it."""
    provisional_locations: list[int] = field(default_factory=list)
    """The locations whose day was not over when it was loaded: provisional in the lake
    and the warehouse, booked nowhere, loaded again once over."""
    overtook: dict[str, str] = field(default_factory=dict)
    """Location -> the load whose copy of the day another writer had committed while
    this run did: this run's later commit replaced it whole."""

    def to_metadata(self, **shown) -> dict:
        return {
            ROW_COUNT: self.receipts,
            "turnover_net": dg.MetadataValue.text(str(self.turnover_net)),
            "complete": self.complete,
            "partitions_kept": self.partitions_kept,
            "pages": self.pages,
            "failed_locations": dg.MetadataValue.json(self.failed_locations),
            "unknown_fields": dg.MetadataValue.json(self.unknown_fields),
            "replaced_by": dg.MetadataValue.text(self.replaced_by),
            "provisional_locations": dg.MetadataValue.json(self.provisional_locations),
            "overtook": dg.MetadataValue.json(self.overtook),
            **shown,
        }

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, object]) -> RevenueDay:
        v = values(metadata)
        return cls(int(v[ROW_COUNT]), Decimal(str(v["turnover_net"])), bool(v["complete"]),
                   int(v["partitions_kept"]), int(v["pages"]), dict(v["failed_locations"]),
                   dict(v["unknown_fields"]), str(v["replaced_by"]),
                   [int(loc) for loc in v.get("provisional_locations") or []],
                   dict(v.get("overtook") or {}))


@dataclass(frozen=True)
class LoadedCheck:
    """The revenue step's check: which partitions it was asked for, which failed."""

    dates: int
    locations: int
    failed: list[FailedPartition] = field(default_factory=list)
    never_loaded: dict[int, int] = field(default_factory=dict)
    """Configured locations outside the run with no revenue of some of its dates: how many."""

    def to_metadata(self, failures: Mapping[str, object]) -> dict:
        """``failures``: the check's table of failures (``failures_metadata``)."""
        return {"dates": self.dates, "locations": self.locations,
                "failed_partitions": len(self.failed),
                "dates_never_loaded_by_location": dg.MetadataValue.json(
                    {str(loc): n for loc, n in self.never_loaded.items()}),
                **failures}

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, object]) -> LoadedCheck:
        v = values(metadata)
        return cls(int(v["dates"]), int(v["locations"]),
                   read_failures(v) if v.get(FAILURES_KEY) else [],
                   {int(k): int(n) for k, n in v["dates_never_loaded_by_location"].items()})


@dataclass(frozen=True)
class SnapshotTaken:
    """A snapshot area's step: the rows of each table, over the locations it took."""

    snapshot_date: str
    row_counts: dict[str, int]
    """Per table, in the area's order."""

    def to_metadata(self, **shown) -> dict:
        return {ROW_COUNT: sum(self.row_counts.values()),
                "snapshot_date": self.snapshot_date,
                "row_counts": dg.MetadataValue.json(self.row_counts), **shown}

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, object]) -> SnapshotTaken:
        v = values(metadata)
        return cls(str(v["snapshot_date"]), {t: int(n) for t, n in v["row_counts"].items()})


@dataclass(frozen=True)
class DriftFound:
    """The drift check's step: days read again, drifted (replaced), unreadable."""

    days: str
    checked: int
    drifted: int
    failed: int

    def to_metadata(self, **shown) -> dict:
        return {"days": dg.MetadataValue.text(self.days), "checked": self.checked,
                "drifted": self.drifted, "failed": self.failed, **shown}

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, object]) -> DriftFound:
        v = values(metadata)
        return cls(str(v["days"]), int(v["checked"]), int(v["drifted"]), int(v["failed"]))


@dataclass(frozen=True)
class ModelMaterialized:
    """A warehouse model a build wrote (or kept: its rows are the file's)."""

    warehouse: str
    table: str
    materialized: str
    rows: int | None = None
    partitions_computed: int | None = None
    """Of a partitioned model: the lake partitions computed (the others kept)."""

    def to_metadata(self, **shown) -> dict:
        return {**shown,
                **({ROW_COUNT: self.rows} if self.rows is not None else {}),
                "warehouse": dg.MetadataValue.path(self.warehouse),
                "table": self.table, "materialized": self.materialized,
                **({"partitions_computed": self.partitions_computed}
                   if self.partitions_computed is not None else {})}

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, object]) -> ModelMaterialized:
        v = values(metadata)
        rows, computed = v.get(ROW_COUNT), v.get("partitions_computed")
        return cls(str(v["warehouse"]), str(v["table"]), str(v["materialized"]),
                   None if rows is None else int(rows),
                   None if computed is None else int(computed))


WHERE_KEY = "failing_partitions"
"""Metadata of a check's Dagster result: the partitions of its failing rows
(``Where.as_json``)."""


@dataclass(frozen=True)
class FailedCheck:
    """A check that failed, as a run recorded it (``from_evaluation``)."""

    name: str
    """``asset: check``, as the Dagster UI names it."""
    severity: str
    """``error`` or ``warn``."""
    failing_rows: int | None = None
    where: tuple[Where, ...] = ()
    detail: str = ""
    """The check's own account of its result (a stale location, say)."""

    @classmethod
    def from_evaluation(cls, evaluation) -> FailedCheck:
        """From a Dagster ``AssetCheckEvaluation`` (its severity and metadata)."""
        meta = {k: v.value for k, v in evaluation.metadata.items()}
        return cls(f"{evaluation.asset_key.to_user_string()}: {evaluation.check_name}",
                   "warn" if evaluation.severity.value == "WARN" else "error",
                   meta.get("failing_rows"),
                   tuple(Where.from_json(w, PARTITION_KEYS) for w in meta.get(WHERE_KEY, [])),
                   evaluation.description or "")

    def lines(self, each_up_to: int = 5) -> list[str]:
        """One ``WARN``/``FAILED`` line (a warning is a line: the summary's count of
        warnings counts these), naming its partition, or how many; below it, indented,
        up to ``each_up_to`` of the partitions and how many more; without partitions,
        the rows or the check's own account."""
        head = f"  {'WARN' if self.severity == 'warn' else 'FAILED'} {self.name}"
        rows = f"{self.failing_rows:,} row{'s' * (self.failing_rows != 1)}" \
            if self.failing_rows else ""
        if not self.where:
            return [head + (f" ({rows})" if rows else "")
                    + (f": {self.detail}" if self.detail else "")]
        if len(self.where) == 1:
            return [f"{head} at {self.where[0]}" + (f" ({rows})" if rows else "")]
        counted = f"{len(self.where)}{'+' * (len(self.where) >= WHERE_LISTED)}"
        lines = [f"{head} at {counted} partitions" + (f" ({rows} in all)" if rows else "")]
        lines += [f"      at {where}" for where in self.where[:each_up_to]]
        more = len(self.where) - each_up_to
        if more > 0:
            lines.append(f"      and {more}{'+' * (len(self.where) >= WHERE_LISTED)} more")
        return lines
