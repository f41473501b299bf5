"""Partitions of the pipeline: business dates x configured locations."""

from __future__ import annotations

import dagster as dg

from pipeline.settings import Settings, load_settings

SETTINGS: Settings = load_settings()
"""Settings of this code location: ``$POS_ETL_CONFIG``, else the built-in sandbox."""

DATE_DIM = "business_date"
LOCATION_DIM = "location"

business_dates = dg.DailyPartitionsDefinition(
    start_date=SETTINGS.schedule.start_date.isoformat(),
    timezone=SETTINGS.schedule.timezone,
)
locations = dg.StaticPartitionsDefinition([str(loc.id) for loc in SETTINGS.locations])
revenue_partitions = dg.MultiPartitionsDefinition(
    {DATE_DIM: business_dates, LOCATION_DIM: locations}
)


def revenue_partition_key(business_date: str, location_id: int | str) -> dg.MultiPartitionKey:
    """The multi-partition key of one location and business date (``YYYY-MM-DD``)."""
    return dg.MultiPartitionKey({DATE_DIM: business_date, LOCATION_DIM: str(location_id)})
