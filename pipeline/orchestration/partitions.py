"""Partitions of the pipeline: one per business date, every location inside it.

A date partition holds the revenue of every configured location for that business date
(one lake partition per location and date underneath). Partitioning by date alone keeps
the partition count independent of the number of locations, and a load of many days runs
as one Dagster run over a partition range. Per-location outcomes are in each
materialization's metadata and in the asset check ``every_location_loaded``.
"""

from __future__ import annotations

from datetime import date

import dagster as dg

from pipeline.core.outcomes import ConfigError
from pipeline.core.settings import Settings

RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def business_dates(settings: Settings) -> dg.DailyPartitionsDefinition:
    """One partition per business date from ``schedule.start_date`` to yesterday (in the
    schedule's time zone), so the UI counts no day under way as missing. The day under
    way is loaded only on request (``pos-etl load --end today``: a run over a range that
    ends after the last partition listed, which Dagster allows: it bounds a range by its
    start and a fixed end date, not by the clock). What is loaded of a day before it is
    over is provisional (``RevenuePartition.provisional``): booked nowhere, loaded again
    once over."""
    return dg.DailyPartitionsDefinition(start_date=settings.schedule.start_date.isoformat(),
                                        timezone=settings.schedule.timezone)


def range_tags(start: date, end: date) -> dict[str, str]:
    """Run tags that make one run cover the business dates ``start`` to ``end``."""
    return {RANGE_START_TAG: start.isoformat(), RANGE_END_TAG: end.isoformat()}


class LoadConfig(dg.Config):
    """Run configuration of the POS-loading assets."""

    locations: list[int] = []
    """Location ids to load; empty means every configured location."""
    missing_only: bool = False
    """Load only the (location, date) partitions not committed in the lake yet (or
    committed provisional: loaded before their day was over): a long backfill resumed
    after it was killed does not fetch what it already has."""


def selected_locations(settings: Settings, config: LoadConfig) -> list[int]:
    """The configured location ids a run loads (every one unless the config names some);
    otherwise the step fails naming what is wrong. (Their keys are the ``pos`` resource's:
    a run whose keys are not all set does not start.)"""
    try:
        ids = ([loc.id for loc in settings.locations] if not config.locations
               else [settings.location(loc).id for loc in config.locations])
    except ConfigError as exc:
        raise dg.Failure(description=str(exc)) from None
    return ids
