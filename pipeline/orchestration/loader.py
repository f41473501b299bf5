"""``pos-etl load``: the Dagster job ``load_job``, run in this process over a date range.

The CLI has no load of its own: it runs the same job as the nightly schedule, on the
Dagster instance of ``$DAGSTER_HOME`` (default ``<data_dir>/dagster_home``), as one run
over the partition range, then ``warehouse_job`` as the sensor ``build_after_load`` would.
So a CLI load is in the run history and its days are materialized partitions in the UI,
with the same metadata as a scheduled load. What it prints comes from the runs' events.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import dagster as dg

from pipeline.accounting import ledger
from pipeline.core.money import format_money
from pipeline.core.outcomes import (
    REPORTED_KEY,
    ErrorKind,
    FailedPartition,
    UsageError,
    read_failures,
)
from pipeline.core.reporting import LineReporter, Reporter
from pipeline.core.settings import Settings
from pipeline.core.untrusted import for_terminal
from pipeline.lake.open import make_lake
from pipeline.load.areas import AREA, SNAPSHOTS
from pipeline.orchestration.assets.drift import DRIFT_KEY
from pipeline.orchestration.assets.freshness import FRESHNESS_CHECK, HISTORY_CHECK
from pipeline.orchestration.assets.revenue import LOADED_CHECK, REVENUE_KEY, REVENUE_STEP
from pipeline.orchestration.assets.warehouse import WAREHOUSE_STEP
from pipeline.orchestration.code_location import build_defs
from pipeline.orchestration.housekeeping import HOUSEKEEPING_JOB
from pipeline.orchestration.instance import open_instance, storage_errors
from pipeline.orchestration.partitions import range_tags
from pipeline.orchestration.progress import SNAPSHOT_AREAS
from pipeline.orchestration.resources import pos_resource
from pipeline.orchestration.runs import process_tags, reap_dead_runs, wait_for_pools
from pipeline.orchestration.schedules import BUILDS_ITSELF, LOAD_JOB, WAREHOUSE_JOB
from pipeline.orchestration.summaries import (
    DriftFound,
    LoadedCheck,
    ModelMaterialized,
    RevenueDay,
    SnapshotTaken,
    values,
)
from pipeline.warehouse.checks import FailedCheck

INTERRUPTS = {dg.DagsterExecutionInterruptedError.__name__, KeyboardInterrupt.__name__}
"""How a step stopped by Ctrl-C or SIGTERM fails: Dagster's error, or a warehouse query's
(``stopped_query``)."""

SNAPSHOT_STEPS = {dg.AssetKey(["lake", area.name]).to_python_identifier() for area in SNAPSHOTS}
"""The steps of the snapshot assets in a run (``lake__catalog``, ...)."""


def date_range(start: date, end: date) -> list[date]:
    """Every date from ``start`` to ``end``, both included."""
    if end < start:
        raise UsageError(f"--end {end} is before --start {start}")
    return [start + timedelta(days=n) for n in range((end - start).days + 1)]


def check_dates(settings: Settings, start: date, end: date) -> list[date]:
    """The business dates of the range, each a partition: from the first to today."""
    days = date_range(start, end)
    first = settings.schedule.start_date
    today = datetime.now(ZoneInfo(settings.schedule.timezone)).date()
    if start < first:
        raise UsageError(f"--start {start} is before the first business date, "
                         f"schedule.start_date = {first}")
    if end > today:
        raise UsageError(f"--end {end} is in the future (today is {today} in "
                         f"{settings.schedule.timezone})")
    return days


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
    snapshots: dict[str, dict[str, int]] = field(default_factory=dict)
    snapshot_failures: dict[str, FailedPartition] = field(default_factory=dict)
    voucher_note: str | None = None
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
        # A date some location of the load is missing is observed, not materialized.
        for event in events:
            if event.is_step_materialization:
                mat = event.event_specific_data.materialization
            elif event.is_asset_observation:
                mat = event.asset_observation_data.asset_observation
            else:
                continue
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
                    message = "stopped (Ctrl-C or SIGTERM)"
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
        for area in SNAPSHOT_AREAS:
            if area in self.snapshots:
                counts = ", ".join(f"{n:,} {table}" for table, n in self.snapshots[area].items())
                lines.append(f"{area} snapshot: {counts}")
        if self.voucher_note:
            lines.append(f"vouchers: {self.voucher_note}")
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
        return "pos-etl build (the previous warehouse is in place until a build finishes)"

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


def _stderr(line: str) -> None:
    print(for_terminal(line), file=sys.stderr, flush=True)


def run_load(settings: Settings, start: date, end: date, location_ids: list[int] | None = None,
             *, catalog: bool = True, models: bool = True, verify: bool = False,
             vouchers: bool | None = None, missing_only: bool = False,
             progress: Reporter | None = None,
             instance: dg.DagsterInstance | None = None) -> LoadReport:
    """Run ``load_job`` over the business dates ``start``..``end`` in this process, then
    ``warehouse_job`` (unless the load was stopped or committed nothing).

    ``catalog=False`` leaves out the catalog and menu snapshots (and the voucher ledger's,
    unless ``vouchers=True``; ``vouchers=False`` leaves out only that), ``models=False``
    the warehouse build. ``verify=True`` loads nothing new: it reads the committed days of
    the range again and replaces those the POS changed (the drift check), then builds.
    ``missing_only=True`` fetches only the partitions not committed in the lake yet.
    Failed partitions and checks are in the report (and fail the run).
    """
    days = check_dates(settings, start, end)
    ids = [settings.location(loc).id for loc in location_ids or []]
    vouchers = catalog if vouchers is None else vouchers
    wants_ledger = vouchers and not verify
    settings.require_keys(ids or None, vouchers=wants_ledger)
    reporter = progress or LineReporter(_stderr)
    defs = build_defs(settings, reporter=reporter,
                      pos=pos_resource(settings, ids or None, wants_ledger))
    job = defs.resolve_job_def(LOAD_JOB)
    wired = defs.resolve_asset_graph().executable_asset_keys
    located = {"config": {"locations": ids}}
    # it builds right after: the sensor build_after_load leaves this change to it
    tags = {"pos_etl/trigger": "cli"} | (BUILDS_ITSELF if models else {})
    if verify:
        selection = [DRIFT_KEY]
        ops = {DRIFT_KEY.to_python_identifier(): {"config": {
            "locations": ids, "start": start.isoformat(), "end": end.isoformat()}}}
    else:
        selection = [REVENUE_KEY]
        ops = {REVENUE_STEP: {"config": {"locations": ids, "missing_only": missing_only}}}
        tags |= range_tags(days[0], days[-1])
        for area in SNAPSHOTS:  # master data with the catalog, the ledger with vouchers
            key = dg.AssetKey(["lake", area.name])
            if key in wired and (catalog if area.master_data else vouchers):
                selection.append(key)
                ops[key.to_python_identifier()] = located
    say = reporter.say
    # The selected assets' own checks; the freshness checks have their sensor (a backfill
    # of old dates is no place to judge today's freshness).
    graph = defs.resolve_asset_graph()
    checks = {key for asset in selection for key in graph.get(asset).check_keys
              if key.name not in (FRESHNESS_CHECK, HISTORY_CHECK)}
    with _session(settings, instance, say) as dagster:
        report = LoadReport.from_run(_execute(dagster, job, ops, tags, selection, say, checks),
                                     len(days), dagster)
        if models and report.changed_lake and not report.interrupted:
            reporter.phase("build")
            build = _execute(dagster, defs.resolve_job_def(WAREHOUSE_JOB), BUILD_OPS,
                             {"pos_etl/trigger": "cli"}, None, say)
            report.build_run_id = build.run_id
            report.read(build, dagster)
    if report.partitions > len(report.failed_partitions) or report.drift:
        report.warnings += ledger.closed_period_warnings(
            make_lake(settings), settings.accounting.year_start, days[0],
            days[-1])
    if wants_ledger and "vouchers" not in report.snapshots \
            and settings.source.voucher_url is None and not settings.uses_sandbox:
        report.voucher_note = "not loaded: source.voucher_url is not configured"
    return report


def run_build(settings: Settings, *, full: bool = False, forget_missing: bool = False,
              progress: Reporter | None = None,
              instance: dg.DagsterInstance | None = None) -> LoadReport:
    """Run ``warehouse_job`` in this process: the models built from the lake (what changed
    since the last build, or everything with ``full``) and checked. Calls no POS.
    ``forget_missing`` drops what the lake lost (else such a loss fails the build)."""
    reporter = progress or LineReporter(_stderr)
    say = reporter.say
    defs = build_defs(settings, reporter=reporter)
    with _session(settings, instance, say) as dagster:
        reporter.phase("build")
        result = _execute(dagster, defs.resolve_job_def(WAREHOUSE_JOB),
                          {WAREHOUSE_STEP: {"config": {"full": full,
                                                       "forget_missing": forget_missing}}},
                          {"pos_etl/trigger": "cli"}, None, say)
        return LoadReport.from_run(result, 0, dagster)


def run_housekeeping(settings: Settings, progress: Reporter | None = None,
                     instance: dg.DagsterInstance | None = None) -> dg.ExecuteInProcessResult:
    """Run ``lake_housekeeping_job`` in this process (what the weekly schedule runs): each
    table's Delta log published, vacuumed past ``[lake] retention_hours``, checkpointed."""
    reporter = progress or LineReporter(_stderr)
    defs = build_defs(settings, reporter=reporter)
    with _session(settings, instance, reporter.say) as dagster:
        return _execute(dagster, defs.resolve_job_def(HOUSEKEEPING_JOB), {},
                        {"pos_etl/trigger": "cli"}, None, reporter.say)


BUILD_OPS = {WAREHOUSE_STEP: {"config": {"full": False}}}
QUIET = {"console": {"config": {"log_level": "CRITICAL"}}}
"""Dagster's console logger of a CLI run: silent (its lines would carry POS text unescaped
and repeat what the reporter says); the run's events stay in the instance for the UI."""


@contextmanager
def _session(settings: Settings, instance: dg.DagsterInstance | None,
             say: Callable[[str], None]) -> Iterator[dg.DagsterInstance]:
    """The shared instance (or ``instance``), once the runs that died are failed and
    their pool slots freed (``pipeline.orchestration.runs``)."""
    with ExitStack() as stack:
        stack.enter_context(storage_errors(settings))
        dagster = instance or stack.enter_context(open_instance(settings))
        for line in reap_dead_runs(dagster):
            say(line)
        yield dagster


def _execute(dagster: dg.DagsterInstance, job: dg.JobDefinition, ops: dict,
             tags: dict[str, str], selection: list[dg.AssetKey] | None,
             say: Callable[[str], None],
             checks: set[dg.AssetCheckKey] | None = None) -> dg.ExecuteInProcessResult:
    """Run ``job`` in this process (of it the assets ``selection`` with the ``checks``, if
    given), printing its progress; a full pool is waited for with a word."""
    wait_for_pools(dagster, {n.definition.pool for n in job.graph.nodes} - {None}, say)
    if selection is not None:
        job = job.get_subset(asset_selection=set(selection), asset_check_selection=checks)
    return job.execute_in_process(
        instance=dagster, tags=tags | process_tags(),
        run_config={"ops": ops, "loggers": QUIET}, raise_on_error=False)
