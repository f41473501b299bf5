"""Is the data as new as it should be? Per location, against the config's deadline.

A location's business date D is due at ``freshness.deadline`` (06:00, say) of the day
after, in the location's own time zone (a business day that starts later than that is
due a day later; ``pipeline.warehouse.coverage.due_date``), unless the location closed before. The
lake is fresh for a location when its newest committed revenue partition is at least the
newest date due; ``rpt_daily_close`` is fresh when it holds that date too, or the lake's
partitions after its newest date have no receipts (a day the location was closed has no
close). The Dagster freshness checks and ``pos-etl status`` both answer from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb

from pipeline.core.settings import Settings
from pipeline.lake.store import LakeStore
from pipeline.warehouse.coverage import expected_dates, lake_days

CLOSED_DAYS_LOOKED_AT = 31
"""Days without receipts after the warehouse's newest close that may still count as
closed days (each is one commit record read)."""


@dataclass(frozen=True)
class LocationFreshness:
    """One location's newest loaded and closed business dates, against the date due."""

    location_id: int
    short_code: str
    due: date | None
    """The newest business date due now (None: none is, ``pipeline.warehouse.coverage``)."""
    yesterday: date
    """The location's last complete business date now (the lag counts from it)."""
    lake_newest: date | None
    close_newest: date | None
    """Newest business date of ``rpt_daily_close`` (None: none, or no warehouse)."""
    closed_days: bool = False
    """The lake's partitions after ``close_newest`` up to ``due`` have no receipts."""

    @property
    def lake_fresh(self) -> bool:
        return self.due is None or (self.lake_newest is not None and self.lake_newest >= self.due)

    @property
    def close_fresh(self) -> bool:
        return self.due is None or self.closed_days or (
            self.close_newest is not None and self.close_newest >= self.due)

    @property
    def lag_days(self) -> int | None:
        """Business dates complete but not in the lake (None: nothing loaded)."""
        return None if self.lake_newest is None else \
            max(0, (self.yesterday - self.lake_newest).days)

    def as_json(self) -> dict:
        return {"location_id": self.location_id, "short_code": self.short_code,
                "due": _iso(self.due), "lake_newest": _iso(self.lake_newest),
                "close_newest": _iso(self.close_newest), "lag_days": self.lag_days,
                "lake_fresh": self.lake_fresh, "close_fresh": self.close_fresh}


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day else None


def newest_closed(warehouse_path: Path) -> dict[int, date]:
    """Per location, the newest business date of ``rpt_daily_close`` (none without a
    warehouse)."""
    if not warehouse_path.exists():
        return {}
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        try:
            return dict(con.execute("select location_id, max(business_date) "
                                    "from rpt_daily_close group by all").fetchall())
        except duckdb.CatalogException:
            return {}


def freshness(settings: Settings, lake: LakeStore, now: datetime,
              days: dict[int, set[date]] | None = None) -> list[LocationFreshness]:
    """Every configured location's freshness at ``now`` (an aware datetime); ``days``:
    the lake's (``lake_days``), if read already."""
    loaded = {loc: max(found) for loc, found in (days or lake_days(lake)).items()}
    closed = newest_closed(settings.warehouse.warehouse_path)
    result = []
    for loc in settings.locations:
        span = expected_dates(settings, loc, now)
        due = span[1] if span else None
        close = closed.get(loc.id)
        result.append(LocationFreshness(
            loc.id, loc.short_code, due, loc.business_date_at(now) - timedelta(days=1),
            loaded.get(loc.id), close,
            closed_days=_no_receipts_after(lake, loc.id, close, due, loaded.get(loc.id))))
    return result


def _no_receipts_after(lake: LakeStore, location_id: int, close: date | None, due: date | None,
                       loaded: date | None) -> bool:
    """Whether every lake partition after ``close`` up to ``due`` is committed and has no
    receipts (looked at for ``CLOSED_DAYS_LOOKED_AT`` days at most)."""
    if close is None or due is None or loaded is None or loaded < due or close >= due \
            or (due - close).days > CLOSED_DAYS_LOOKED_AT:
        return False
    for n in range(1, (due - close).days + 1):
        record = lake.committed("revenue", {"location_id": location_id,
                                            "business_date": (close + timedelta(days=n))
                                            .isoformat()})
        if record is None or int(record.metadata.get("receipts", 1)) != 0:
            return False
    return True
