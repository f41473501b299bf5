"""The date a catalog snapshot is filed under: today, in the schedule's time zone."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from pipeline.settings import Settings


def snapshot_date(settings: Settings) -> date:
    """Today's date where the pipeline is scheduled (the snapshot's partition)."""
    return datetime.now(ZoneInfo(settings.schedule.timezone)).date()
