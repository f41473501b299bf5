"""What a load or build did, read from its runs' events (``LoadReport``), and the summary
``pos-etl`` prints: counts, turnover, and every failure by name. The runs themselves are
``pipeline.orchestration.loader``'s."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal

import dagster as dg

from pipeline.areas import AREA, SNAPSHOTS
from pipeline.core.money import format_money
from pipeline.core.outcomes import (
    REPORTED_KEY,
    ErrorKind,
    FailedPartition,
    read_failures,
)
from pipeline.orchestration.assets.drift import DRIFT_KEY
from pipeline.orchestration.assets.revenue import LOADED_CHECK, REVENUE_KEY, REVENUE_STEP
from pipeline.orchestration.progress import SNAPSHOT_AREAS
from pipeline.orchestration.runs import STOPPED
from pipeline.orchestration.summaries import (
    DriftFound,
    FailedCheck,
    LoadedCheck,
    ModelMaterialized,
    RevenueDay,
    SnapshotTaken,
    values,
)

INTERRUPTS = {dg.DagsterExecutionInterruptedError.__name__, KeyboardInterrupt.__name__}
"""How a step stopped by Ctrl-C or SIGTERM fails: Dagster's error, or a warehouse query's
(``stopped_query``)."""

SNAPSHOT_STEPS = {dg.AssetKey(["lake", area.name]).to_python_identifier() for area in SNAPSHOTS}
"""The steps of the snapshot assets in a run (``lake__catalog``, ...)."""


def recorded(events: list[dg.DagsterEvent]) -> Iterator:
    """The materializations and observations among a run's events (a date some location
    of a load is missing is observed, not materialized)."""
    for event in events:
        if event.is_step_materialization:
            yield event.event_specific_data.materialization
        elif event.is_asset_observation:
            yield event.asset_observation_data.asset_observation


@dataclass
class LoadReport:
    """What a load did, read from its run's events."""

    run_id: str
    success: bool
    days: int
    build_run_id: str | None = None
    """The warehouse build's run, after the load's."""
    locations: int = 0
    partitions: int = 0
    receipts: int = 0
    turnover_net: Decimal = Decimal(0)
    partitions_kept: int = 0
    """Partitions committed before and not fetched again (``--missing-only``)."""
    pages: int = 0
    """Revenue report pages received (each one request that succeeded)."""
    failed_partitions: list[FailedPartition] = field(default_factory=list)
    never_loaded: dict[int, int] = field(default_factory=dict)
    """Locations not in this load that have no revenue of some of its dates (how many)."""
    unknown_fields: dict[str, int] = field(default_factory=dict)
    """Fields the spec does not name that the receipts carried (``table.field``: rows),
    kept in the lake's ``extra_fields``."""
    provisional: dict[str, list[int]] = field(default_factory=dict)
    """Business date -> the locations whose day was not over when loaded (provisional)."""
    snapshots: dict[str, dict[str, int]] = field(default_factory=dict)
    snapshot_failures: dict[str, FailedPartition] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """What the load left out and why (a source that is not configured)."""
    drift: DriftFound | None = None
    """What a drift check found (``pos-etl verify``): days checked, drifted, failed."""
    models: int = 0
    partitions_computed: int = 0
    """Lake partitions the partitioned models were computed for (the rest were kept)."""
    warehouse_path: str | None = None
    failed_checks: list[str] = field(default_factory=list)
    warned_checks: list[FailedCheck] = field(default_factory=list)
    """Failed checks of severity warn: the runs succeeded (``--warn-error`` fails them)."""
    warnings: list[str] = field(default_factory=list)
    """What else a person must know, a warning each (``--warn-error`` fails them): dates
    loaded into a closed booking period."""
    errors: list[str] = field(default_factory=list)
    interrupted: str | None = None
    """The step that Ctrl-C or SIGTERM stopped (the command exits 130)."""
    failed_steps: list[str] = field(default_factory=list)
    """The steps that failed (an error, a stop), by key."""
    dates_done: int = 0
    """Business dates the revenue step finished (each committed for every location that
    did not fail), counted from its events: what a stopped load leaves done."""
    warn_error: bool = False
    """Warnings fail the command (``--warn-error``, dbt's name)."""
    build_command: str = "pos-etl build"
    """The command that builds with the same settings (``Settings.command``)."""

    @property
    def changed_lake(self) -> bool:
        """The load committed something: a warehouse build has work."""
        return (self.partitions > len(self.failed_partitions) or bool(self.snapshots)
                or self.drift is not None)

    @property
    def ok(self) -> bool:
        """The runs succeeded and nothing failed (nor warned, with ``warn_error``)."""
        return self.success and not (self.failed_partitions or self.snapshot_failures
                                     or self.failed_checks or self.errors
                                     or (self.drift and self.drift.failed)
                                     or (self.warn_error and (self.warned_checks
                                                              or self.warnings)))

    @classmethod
    def from_run(cls, result: dg.ExecuteInProcessResult, days: int,
                 instance: dg.DagsterInstance) -> LoadReport:
        report = cls(result.run_id, True, days)
        report.read(result, instance)
        return report

    def read(self, result: dg.ExecuteInProcessResult, instance: dg.DagsterInstance) -> None:
        """Add what the run ``result`` did (a load's, then its build's), read from the
        run's event log: a run stopped by Ctrl-C has recorded there what it committed
        before the stop, which ``result`` alone may not carry."""
        self.success = self.success and result.success
        events = [entry.dagster_event for entry in instance.all_logs(result.run_id)
                  if entry.dagster_event is not None]
        for mat in recorded(events):
            area = mat.asset_key.path[-1]
            if mat.asset_key == REVENUE_KEY:
                day = RevenueDay.from_metadata(mat.metadata)
                if day.replaced_by:  # the drift check's: its own summary says it
                    continue
                self.dates_done += 1
                self.receipts += day.receipts
                self.turnover_net += day.turnover_net
                self.partitions_kept += day.partitions_kept
                self.pages += day.pages
                if day.provisional_locations:
                    self.provisional[mat.partition] = day.provisional_locations
                self.warnings += [
                    f"revenue {mat.partition}, location {loc}: another load committed this "
                    f"day while this one did (load {other}); this load's later commit "
                    "replaced it whole: two processes load this location at once"
                    for loc, other in day.overtook.items()]
                for name, rows in day.unknown_fields.items():
                    self.unknown_fields[name] = self.unknown_fields.get(name, 0) + rows
            elif mat.asset_key == DRIFT_KEY:
                self.drift = DriftFound.from_metadata(mat.metadata)
            elif mat.asset_key.path[0] == "lake":  # its tables in the area's order
                counts = SnapshotTaken.from_metadata(mat.metadata).row_counts
                self.snapshots[area] = {table: counts[table] for table in AREA[area].tables
                                        if table in counts}
            else:
                built = ModelMaterialized.from_metadata(mat.metadata)
                self.models += 1
                self.warehouse_path = built.warehouse
                self.partitions_computed = max(self.partitions_computed,
                                               built.partitions_computed or 0)
        for evaluation in [e.asset_check_evaluation_data for e in events
                           if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION]:
            meta = values(evaluation.metadata)
            if evaluation.check_name == LOADED_CHECK:
                loaded = LoadedCheck.from_metadata(evaluation.metadata)
                self.never_loaded = loaded.never_loaded
                self.partitions = loaded.dates * loaded.locations
                self.locations = loaded.locations
            if evaluation.passed:
                continue
            name = f"{evaluation.asset_key.to_user_string()}: {evaluation.check_name}"
            if evaluation.check_name == LOADED_CHECK:
                self.failed_partitions = loaded.failed
            elif evaluation.asset_key.path[0] == "lake":
                for failure in read_failures(meta):
                    where = " ".join([evaluation.asset_key.path[-1]]
                                     + [str(failure.location_id)] * bool(failure.location_id))
                    self.snapshot_failures[where] = failure
            elif evaluation.severity == dg.AssetCheckSeverity.WARN:
                self.warned_checks.append(FailedCheck.from_evaluation(evaluation))
            else:
                self.failed_checks.append(f"{name} ({meta.get('failing_rows')} rows)")
        for event in events:
            if event.is_step_failure:
                self.failed_steps.append(event.step_key)
                failure = event.step_failure_data
                chain = [failure.error]
                while chain[-1].cause is not None:  # down to the error the step raised
                    chain.append(chain[-1].cause)
                error = chain[-1]
                if any(e.cls_name in INTERRUPTS for e in chain):
                    self.interrupted = event.step_key
                    message = STOPPED
                elif failure.user_failure_data and \
                        REPORTED_KEY in failure.user_failure_data.metadata:
                    continue  # its failed partitions or snapshots are listed already
                elif failure.user_failure_data:
                    message = failure.user_failure_data.description
                else:  # its first line: a DuckDB error names the file, then quotes SQL
                    message = (error.message.strip().splitlines() or [error.cls_name])[0]
                self.errors.append(f"{event.step_key}: {message}")

    def summary(self) -> str:
        """What a person reads after a load: counts, turnover, and every failure by name."""
        loaded = self.partitions - len(self.failed_partitions)
        kept = (f", {self.partitions_kept:,} of them committed before and not fetched again"
                if self.partitions_kept else "")
        if self.drift is not None or not self.days:
            lines = []
        elif REVENUE_STEP in self.failed_steps and not self.partitions:
            # its check, which counts the partitions, never ran: what its events say
            how = "stopped" if self.interrupted == REVENUE_STEP else "failed"
            lines = [f"revenue: {how} with {self.dates_done} of {self.days} business dates "
                     f"done, {self.receipts:,} receipts, turnover_net "
                     f"{format_money(self.turnover_net)} EUR (each date done is committed for "
                     f"every location that did not fail)"]
        else:
            lines = [f"revenue: {loaded} of {self.partitions} partitions loaded ({self.days} "
                     f"business dates x {self.locations} locations{kept}); "
                     f"{self.receipts:,} receipts, turnover_net "
                     f"{format_money(self.turnover_net)} EUR"]
        if self.drift is not None:
            lines.append(f"verify {self.drift.days}: {self.drift.checked} partitions "
                         f"read again, {self.drift.drifted} drifted (replaced and recorded "
                         f"in rpt_source_drift), {self.drift.failed} could not be read")
        lines += _failed_partition_lines(self.failed_partitions)
        if self.unknown_fields:
            lines.append("  note: fields the spec does not name, kept in the lake's "
                         "extra_fields: " + ", ".join(
                             f"{name} ({rows:,} rows)"
                             for name, rows in sorted(self.unknown_fields.items())))
        for loc, n in self.never_loaded.items():
            lines.append(f"  note: location {loc} (not in this load) has no revenue of {n} of "
                         f"these dates yet")
        for day, locations in sorted(self.provisional.items()):
            lines.append(f"  note: {day} is not over yet at location "
                         f"{', '.join(map(str, locations))}: loaded as provisional (marked so "
                         "in the warehouse and rpt_coverage; in no booking file, close or cash "
                         "book; the next load once it is over loads it again)")
        for area in SNAPSHOT_AREAS:
            if area in self.snapshots:
                counts = ", ".join(f"{n:,} {table}" for table, n in self.snapshots[area].items())
                lines.append(f"{area} snapshot: {counts}")
        lines += [f"  {note}" for note in self.notes]
        by_reason = _by_reason(self.snapshot_failures.items(), lambda item: item[1])
        for reason, failures in by_reason.items():
            whats = [what for what, _ in failures]
            lines.append(f"  FAILED {', '.join(whats)}: {reason}")
        if self.warehouse_path:
            lines.append(f"warehouse: {self.warehouse_path} ({self.models} models; "
                         f"{self.partitions_computed} partitions computed, the others kept)")
        for check in self.failed_checks:
            lines.append(f"  CHECK FAILED {check}")
        for warned in self.warned_checks:
            lines += warned.lines()
        lines += [f"  WARN {warning}" for warning in self.warnings]
        lines += [f"  FAILED {error}" for error in self.errors]
        if self.interrupted:
            lines.append(f"  to finish: {self.finish}")
        lines.append(self.runs_line)
        lines.append(f"result: {self.result}")
        return "\n".join(lines)

    @property
    def result(self) -> str:
        """``OK``, ``OK, 2 warnings`` or ``FAILED`` (with why, when only warnings)."""
        warnings = len(self.warned_checks) + len(self.warnings)
        said = f"{warnings} warning{'s' * (warnings > 1)}"
        if not self.ok:
            return f"FAILED ({said}, --warn-error)" if self.warn_error and warnings and \
                replace(self, warn_error=False).ok else "FAILED"
        return f"OK, {said}" if warnings else "OK"

    @property
    def finish(self) -> str:
        """What finishes the work a stop left undone."""
        if self.interrupted == REVENUE_STEP:
            return ("the same command with --missing-only (it fetches only the partitions "
                    "not committed yet)")
        if self.interrupted in SNAPSHOT_STEPS:
            return "the same command again (its revenue is committed; a snapshot is not)"
        return (f"{self.build_command} (the previous warehouse is in place until a build "
                "finishes)")

    @property
    def runs_line(self) -> str:
        return (f"dagster runs: {self.run_id} (load), {self.build_run_id} (build)"
                if self.build_run_id else f"dagster run: {self.run_id}")


def _by_reason(failures, failed_of) -> dict[str, list]:
    """Failures grouped by their reason (the message): a request not tried carries the
    reason of the one that found the POS down or the key refused."""
    groups: dict[str, list] = {}
    for failure in failures:
        groups.setdefault(failed_of(failure).failure.message, []).append(failure)
    return groups


def _failed_partition_lines(failed: list[FailedPartition], each_up_to: int = 3) -> list[str]:
    """One line per failed partition, or, where more than ``each_up_to`` failed for one
    reason (a dead host, a refused key), one line for them all."""
    lines = []
    for reason, group in _by_reason(failed, lambda f: f).items():
        if len(group) <= each_up_to:
            lines += [f"  FAILED {f.where}: {'not tried: ' * (not f.failure.tried)}{reason}"
                      for f in group]
            continue
        locations = sorted({f.location_id for f in group})
        dates = sorted(f.business_date for f in group)
        not_tried = sum(f.failure.kind == ErrorKind.NOT_TRIED for f in group)
        lines.append(f"  FAILED {len(group):,} partitions (location{'s' * (len(locations) > 1)} "
                     f"{', '.join(map(str, locations))}; {dates[0]} .. {dates[-1]}; "
                     f"{not_tried:,} of them not tried): {reason}")
    return lines
