"""``pos-etl load``: the Dagster job ``load_job``, run in this process over a date range.

The CLI has no load of its own: it runs the same job as the nightly schedule, on the
Dagster instance of ``$DAGSTER_HOME`` (default ``<data_dir>/dagster_home``), as one run
over the partition range, then ``warehouse_job`` as the sensor ``build_after_load`` would.
So a CLI load is in the run history and its days are materialized partitions in the UI,
with the same metadata as a scheduled load. What it prints comes from the runs' events.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterator
from contextlib import ExitStack, contextmanager, suppress
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import dagster as dg

from pipeline.accounting import ledger
from pipeline.areas import SNAPSHOTS
from pipeline.areas.revenue import AREA as REVENUE
from pipeline.core import stops
from pipeline.core.outcomes import UsageError
from pipeline.core.reporting import LineReporter, Reporter
from pipeline.core.settings import Settings
from pipeline.core.untrusted import for_terminal
from pipeline.lake.open import make_lake
from pipeline.orchestration.assets.drift import DRIFT_KEY
from pipeline.orchestration.assets.freshness import FRESHNESS_CHECK, HISTORY_CHECK
from pipeline.orchestration.assets.revenue import REVENUE_KEY, REVENUE_STEP
from pipeline.orchestration.assets.warehouse import WAREHOUSE_STEP
from pipeline.orchestration.code_location import build_defs
from pipeline.orchestration.housekeeping import HOUSEKEEPING_JOB
from pipeline.orchestration.instance import open_instance, storage_errors
from pipeline.orchestration.load_report import LoadReport
from pipeline.orchestration.partitions import range_tags
from pipeline.orchestration.resources import pos_resource
from pipeline.orchestration.runs import process_tags, reap_dead_runs, wait_for_pools
from pipeline.orchestration.schedules import BUILDS_ITSELF, LOAD_JOB, WAREHOUSE_JOB
from pipeline.sources import OPTIONAL, SOURCES, require_keys


def date_range(start: date, end: date) -> list[date]:
    """Every date from ``start`` to ``end``, both included."""
    if end < start:
        raise UsageError(f"--end {end} is before --start {start}")
    return [start + timedelta(days=n) for n in range((end - start).days + 1)]


def check_dates(settings: Settings, start: date, end: date) -> list[date]:
    """The business dates of the range, each a partition: from the first up to today. A
    day still under way at a location (``Settings.last_date_over``) is loaded as
    provisional there (``RevenuePartition.provisional``), booked nowhere, and loaded again
    by the next load once it is over."""
    days = date_range(start, end)
    first = settings.schedule.start_date
    now = datetime.now(ZoneInfo(settings.schedule.timezone))
    if start < first:
        raise UsageError(f"--start {start} is before the first business date, "
                         f"schedule.start_date = {first}")
    if end > now.date():
        raise UsageError(f"--end {end} is in the future (today is {now.date()} in "
                         f"{settings.schedule.timezone})")
    return days


def _stderr(line: str) -> None:
    print(for_terminal(line), file=sys.stderr, flush=True)


def run_load(settings: Settings, start: date, end: date, location_ids: list[int] | None = None,
             *, catalog: bool = True, models: bool = True, verify: bool = False,
             skip: Collection[str] | None = None, missing_only: bool = False,
             source_moved: bool = False, progress: Reporter | None = None,
             instance: dg.DagsterInstance | None = None) -> LoadReport:
    """Run ``load_job`` over the business dates ``start``..``end`` in this process, then
    ``warehouse_job`` (unless the load was stopped or committed nothing).

    ``catalog=False`` leaves out the catalog and menu snapshots, ``skip`` the sources so
    named (``pipeline.sources``' optional ones; by default none, or all of them with
    ``catalog=False``), ``models=False`` the warehouse build. ``verify=True`` loads nothing
    new: it reads the committed days of the range again and replaces those the POS
    changed (the drift check), then builds.
    ``missing_only=True`` fetches only the partitions not committed in the lake yet.
    Failed partitions and checks are in the report (and fail the run).

    A lake that holds another source's data is refused before anything runs
    (``pipeline.lake.source_mark.ForeignLake``, a configuration error), unless
    ``source_moved``: the same POS at the new ``base_url``, recorded as the lake's.
    """
    days = check_dates(settings, start, end)
    ids = [settings.location(loc).id for loc in location_ids or []]
    if verify:  # a drift check reads revenue only
        skip = {s.name for s in SOURCES if s != REVENUE.source}
    elif skip is None:
        skip = set() if catalog else {s.name for s in OPTIONAL}
    require_keys(settings, ids or None, skip)
    with suppress(OSError):  # a store that cannot be read: every write fails by name
        make_lake(settings).claim(ids or [loc.id for loc in settings.locations],
                                  moved=source_moved)
    reporter = progress or LineReporter(_stderr)
    defs = build_defs(settings, reporter=reporter,
                      pos=pos_resource(settings, ids or None, skip))
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
        for area in SNAPSHOTS:  # master data with the catalog, each source's unless skipped
            key = dg.AssetKey(["lake", area.name])
            if key in wired and (catalog or not area.master_data) \
                    and area.source.name not in skip:
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
        report.build_command = settings.command("build")
        if models and report.changed_lake and not report.interrupted and stops.seen():
            report.interrupted = WAREHOUSE_STEP  # Ctrl-C dropped as the load finished
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
    report.notes += [f"{area.name}: not loaded: {area.source.setting} is not configured"
                     for area in SNAPSHOTS if area.source.name not in skip
                     and not area.wired(settings)]
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
        report = LoadReport.from_run(result, 0, dagster)
        report.build_command = settings.command("build")
        return report


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
