"""Freshness checks on ``lake/revenue`` and ``warehouse/rpt_daily_close``, and the sensor
that evaluates them.

Each check asks ``pipeline.warehouse.freshness`` whether every location's newest business date due
by the config's deadline (``freshness.deadline``, each location's local time) is there; a
stale location fails it (severity error, red in the UI), naming the location, its newest
date and the date due. The sensor ``freshness`` looks every ten minutes and runs the
checks (``freshness_job``) when what is stale changed, so the UI and the alerts follow a
lake that stopped growing (a schedule switched off, a load that keeps failing) without a
run every ten minutes. With them runs ``history_complete`` (severity warn): the dates
missing between each location's first and newest loaded date (``pipeline.warehouse.coverage``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

import dagster as dg

from pipeline.core.settings import Settings
from pipeline.lake.store import LakeStore
from pipeline.orchestration.assets.metadata import markdown_table
from pipeline.orchestration.assets.revenue import REVENUE_KEY
from pipeline.warehouse.coverage import Gaps, history, lake_days
from pipeline.warehouse.freshness import LocationFreshness, freshness

CLOSE_KEY = dg.AssetKey(["warehouse", "rpt_daily_close"])
FRESHNESS_CHECK = "fresh_by_deadline"
FRESHNESS_JOB = "freshness_job"
FRESHNESS_SENSOR = "freshness"
HISTORY_CHECK = "history_complete"
HOLES_KEY = "holes"
"""Metadata of the history check's result: the locations with holes (``Gaps.as_json``)."""
STALE_KEY = "stale_locations"
"""Metadata of a freshness check's result: the stale locations (``LocationFreshness.as_json``)."""


def _result(states: list[LocationFreshness], fresh: Callable[[LocationFreshness], bool],
            newest: str, deadline: str) -> dg.AssetCheckResult:
    stale = [s for s in states if not fresh(s)]
    return dg.AssetCheckResult(
        passed=not stale, severity=dg.AssetCheckSeverity.ERROR,
        description=f"every location's business date due by {deadline} local time is there"
        if not stale else f"{len(stale)} of {len(states)} locations behind: " + ", ".join(
            f"{s.location_id} (newest {getattr(s, newest) or 'none'}, due {s.due})"
            for s in stale),
        metadata={STALE_KEY: dg.MetadataValue.json([s.as_json() for s in stale]),
                  "locations": dg.MetadataValue.md(markdown_table(
                      ["location", "newest", "due", "fresh"],
                      [[s.location_id, getattr(s, newest) or "", s.due or "", fresh(s)]
                       for s in states]))})


FRESHNESS_OF = {
    REVENUE_KEY: ("lake_fresh", "lake_newest", "yesterday's business date of every location "
                                               "is in the lake"),
    CLOSE_KEY: ("close_fresh", "close_newest", "yesterday's daily close of every location is "
                                               "in the warehouse"),
}
"""Per asset: the ``LocationFreshness`` fields of its check, and what the check says."""


def build_freshness_checks(settings: Settings) -> list[dg.AssetChecksDefinition]:
    """The freshness checks of these settings, one per asset of ``FRESHNESS_OF``, and
    the check that the revenue lake's history has no holes."""
    return [*(_freshness_check(settings, key, *what) for key, what in FRESHNESS_OF.items()),
            _history_check(settings)]


def _holes_result(found: list[Gaps]) -> dg.AssetCheckResult:
    holed = [g for g in found if g.missing]
    return dg.AssetCheckResult(
        passed=not holed, severity=dg.AssetCheckSeverity.WARN,
        description="every location has every business date from its first to its newest "
                    "loaded one" if not holed else "; ".join(g.line() for g in holed),
        metadata={HOLES_KEY: dg.MetadataValue.json([g.as_json() for g in holed]),
                  "locations": dg.MetadataValue.md(markdown_table(
                      ["location", "first", "newest", "expected", "missing", "missing dates"],
                      [[g.location_id, g.first or "", g.last or "", g.expected,
                        len(g.missing), g.describe() if g.missing else ""]
                       for g in found]))})


def _history_check(settings: Settings) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=REVENUE_KEY, name=HISTORY_CHECK,
                    description="every location has every business date from its first "
                                "(its first_business_date, else schedule.start_date) to its "
                                "newest loaded one; a hole is a warning naming the dates")
    def history_complete(lake: dg.ResourceParam[LakeStore]) -> dg.AssetCheckResult:
        return _holes_result(history(settings, lake_days(lake), datetime.now(UTC)))

    return history_complete


def _freshness_check(settings: Settings, key: dg.AssetKey, fresh: str, newest: str,
                     said: str) -> dg.AssetChecksDefinition:
    deadline = settings.freshness.deadline

    @dg.asset_check(asset=key, name=FRESHNESS_CHECK,
                    description=f"{said} by {deadline} local time")
    def fresh_by_deadline(lake: dg.ResourceParam[LakeStore]) -> dg.AssetCheckResult:
        return _result(freshness(settings, lake, datetime.now(UTC)),
                       lambda s: getattr(s, fresh), newest, deadline)

    return fresh_by_deadline


def freshness_job(checks: list[dg.AssetChecksDefinition]) -> dg.UnresolvedAssetJobDefinition:
    return dg.define_asset_job(
        FRESHNESS_JOB, selection=dg.AssetSelection.checks(*checks),
        description="Evaluate the freshness checks (the sensor freshness runs it when what "
                    "is stale changed).")


def build_freshness_sensor(settings: Settings) -> dg.SensorDefinition:
    """Every ten minutes: which locations are stale and which have holes; a run of the
    checks when that changed."""

    @dg.sensor(name=FRESHNESS_SENSOR, job_name=FRESHNESS_JOB, minimum_interval_seconds=600,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Run the freshness checks when a location turns stale or fresh.")
    def freshness_sensor(context: dg.SensorEvaluationContext, lake: dg.ResourceParam[LakeStore]):
        now = datetime.now(UTC)
        days = lake_days(lake)
        states = freshness(settings, lake, now, days)
        stale = json.dumps(sorted(
            [s.location_id, s.due.isoformat() if s.due else None, s.lake_fresh, s.close_fresh]
            for s in states if not (s.lake_fresh and s.close_fresh))
            + [[g.location_id, [[a.isoformat(), b.isoformat()] for a, b in g.ranges]]
               for g in history(settings, days, now) if g.missing])
        if stale == context.cursor:
            return dg.SkipReason("nothing turned stale or fresh since the last evaluation")
        context.update_cursor(stale)
        return dg.RunRequest()

    return freshness_sensor
