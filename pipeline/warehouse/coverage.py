"""Which business dates should be there, and which are: the one home of completeness.

A configured location's **expected** business dates run from its first date
(``first_business_date``, default ``[schedule] start_date``) to the newest date due now
(``due_date``: its time zone, business-day start and the freshness deadline), or to its
``last_business_date`` when it closed. A date is **there** when the revenue partition of
that location and date is committed: a day without receipts is committed like any other
(a closed day is data, not a hole). Where "there" is asked of the warehouse (closing a
period, exporting), it means the warehouse was built from that partition.

``pos-etl status``, ``close-period``, every export and the report ask here; none keeps
its own idea of completeness.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path

import duckdb

from pipeline.areas.revenue.commits import PROVISIONAL
from pipeline.core.settings import LocationSettings, Settings
from pipeline.lake.store import LakeStore, parse_partition

RANGES_SHOWN = 3
"""Missing ranges a one-line description names before it counts the rest."""


@dataclass(frozen=True)
class Gaps:
    """One location's expected business dates in a range, and those not there."""

    location_id: int
    short_code: str
    first: date | None
    """First date expected in the range asked (None: none is expected)."""
    last: date | None
    expected: int
    missing: tuple[date, ...]

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def present(self) -> int:
        return self.expected - len(self.missing)

    @property
    def ranges(self) -> list[tuple[date, date]]:
        """The missing dates as runs of consecutive dates."""
        runs: list[tuple[date, date]] = []
        for day in self.missing:
            if runs and day - runs[-1][1] == timedelta(days=1):
                runs[-1] = (runs[-1][0], day)
            else:
                runs.append((day, day))
        return runs

    def describe(self, shown: int = RANGES_SHOWN) -> str:
        """The missing dates in a few words: ``2026-08-08 .. 2026-08-31 (24 days)``, the
        first ``shown`` ranges, then how many more."""
        ranges = self.ranges
        parts = [f"{a}" if a == b else f"{a} .. {b}" for a, b in ranges[:shown]]
        if len(ranges) > shown:
            parts.append(f"and {len(ranges) - shown} more range"
                         f"{'s' * (len(ranges) - shown > 1)}")
        count = len(self.missing)
        return f"{', '.join(parts)} ({count} day{'s' * (count > 1)} of {self.expected})"

    def line(self) -> str:
        """``location 1001 VIE01: missing 2026-08-08 .. 2026-08-31 (24 days of 31)``."""
        return f"location {self.location_id} {self.short_code}: missing {self.describe()}"

    def as_json(self) -> dict:
        return {"location_id": self.location_id, "short_code": self.short_code,
                "first": _iso(self.first), "last": _iso(self.last),
                "expected": self.expected, "present": self.present,
                "missing": len(self.missing),
                "missing_ranges": [[a.isoformat(), b.isoformat()] for a, b in self.ranges]}


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day else None


def due_date(location: LocationSettings, deadline: time, now: datetime) -> date:
    """The newest business date of ``location`` that must be loaded at ``now``: date D
    is due at ``deadline`` of the day after, in the location's time zone."""
    local = now.astimezone(location.tz)
    passed = datetime.combine(local.date(), deadline, tzinfo=location.tz)
    if local < passed:
        passed -= timedelta(days=1)
    return location.business_date_at(passed) - timedelta(days=1)


def expected_dates(settings: Settings, location: LocationSettings, now: datetime | None,
                   start: date | None = None, end: date | None = None
                   ) -> tuple[date, date] | None:
    """The first and last business date ``location`` should have in ``start``..``end``
    (both optional) at ``now`` (None: every date up to ``end``, due or not), or None
    when it should have none there."""
    first = max(filter(None, (location.first_business_date, settings.schedule.start_date,
                              start)))
    due = None if now is None else due_date(
        location, time.fromisoformat(settings.freshness.deadline), now)
    last = min(filter(None, (location.last_business_date, due, end)))
    return (first, last) if first <= last else None


def gaps(settings: Settings, present: Mapping[int, Iterable[date]], now: datetime | None,
         start: date | None = None, end: date | None = None,
         location_ids: Iterable[int] | None = None) -> list[Gaps]:
    """Per configured location (or those of ``location_ids``): the dates expected in
    ``start``..``end`` at ``now`` (``expected_dates``) and those of them not in
    ``present``."""
    wanted = set(location_ids) if location_ids is not None else None
    result = []
    for loc in settings.locations:
        if wanted is not None and loc.id not in wanted:
            continue
        span = expected_dates(settings, loc, now, start, end)
        if span is None:
            result.append(Gaps(loc.id, loc.short_code, None, None, 0, ()))
            continue
        have = set(present.get(loc.id, ()))
        days = [span[0] + timedelta(days=n) for n in range((span[1] - span[0]).days + 1)]
        result.append(Gaps(loc.id, loc.short_code, span[0], span[1], len(days),
                           tuple(d for d in days if d not in have)))
    return result


def lake_days(lake: LakeStore) -> dict[int, set[date]]:
    """Per location, the business dates whose revenue partition is committed, final: one
    loaded before its day was over (provisional) is not there until it is loaded again."""
    days: dict[int, set[date]] = {}
    for path, record in lake.records("revenue").items():
        if PROVISIONAL in record.metadata:
            continue
        partition = parse_partition(path)
        days.setdefault(int(partition["location_id"]), set()).add(
            date.fromisoformat(partition["business_date"]))
    return days


def warehouse_days(warehouse_path: Path) -> dict[int, set[date]]:
    """Per location, the business dates the warehouse at ``warehouse_path`` was built
    from, final (none without a warehouse): a date it holds as provisional (loaded before
    it was over, ``rpt_coverage``) is not there for a close or a booking file."""
    # the warehouse package builds on this module
    from pipeline.warehouse.state import built_from_state, state_file

    days = built_from_state(state_file(warehouse_path))
    for location, day in provisional_days(warehouse_path):
        days.get(location, set()).discard(day)
    return days


def provisional_days(warehouse_path: Path) -> list[tuple[int, date]]:
    """(location, business date) the warehouse holds as provisional (``rpt_coverage``)."""
    if not warehouse_path.exists():
        return []
    try:
        with duckdb.connect(str(warehouse_path), read_only=True) as con:
            return con.execute("select location_id, business_date from rpt_coverage "
                               "where coverage_status = 'provisional' order by all").fetchall()
    except duckdb.Error:  # no warehouse yet, or one built before provisional days
        return []


def history(settings: Settings, days: Mapping[int, Iterable[date]], now: datetime
            ) -> list[Gaps]:
    """Per configured location that has any date loaded (``days``: ``lake_days``), its
    expected dates up to its newest loaded one and the holes among them. The dates after
    it are the freshness's to judge (``pipeline.warehouse.freshness``)."""
    return [found for loc in settings.locations if days.get(loc.id)
            for found in gaps(settings, days, now, end=max(days[loc.id]),
                              location_ids=[loc.id])]
