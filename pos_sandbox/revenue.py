"""The revenue report of the sandbox (spec 4.1): windows, cursor and limit over the receipts.

Receipts are served in a fixed order, (dateTime, transactionId), so that the spec's
paging rule holds: the next page starts after the row whose id the caller sends as
``afterTransactionID``. Days are made on demand and a few are kept, encoded, so that a
year-long window costs a day's memory at a time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from threading import Event, Lock
from zoneinfo import ZoneInfo

import msgspec

from pipeline.pos_api import models as m
from pos_sandbox import world
from pos_sandbox.profiles import ServerProfile
from pos_sandbox.receipts import SandboxData, service_day, service_day_of, wire_receipt

ENCODER = msgspec.json.Encoder(decimal_format="number")


@dataclass(frozen=True)
class ServedReceipt:
    wall_clock: datetime
    transaction_id: str
    utc: datetime
    body: bytes


class UnknownCursor(ValueError):
    """``afterTransactionID`` names no receipt of this location."""


class RevenueBook:
    """Encoded receipts per location and service day, with a small LRU of days. A day is
    made once however many requests ask for it at once (a load fetches neighbouring
    dates in parallel, and each date reads two service days): the others wait for it."""

    def __init__(self, data: SandboxData, days_kept: int = 24):
        self.data = data
        self.days_kept = days_kept
        self._days: OrderedDict[tuple[int, date], list[ServedReceipt]] = OrderedDict()
        self._posted: dict[tuple[int, date], list[m.Receipt]] = {}
        self._making: dict[tuple[int, date], Event] = {}
        self._lock = Lock()

    def post(self, location_id: int, receipts: list[m.Receipt]) -> None:
        """Book receipts made by the sandbox (external orders) into their service days."""
        with self._lock:
            for r in receipts:
                key = (location_id, r.date_time.date())
                self._posted.setdefault(key, []).append(r)
                self._days.pop(key, None)

    def service_day(self, location_id: int, day: date) -> list[ServedReceipt]:
        key = (location_id, day)
        while True:
            with self._lock:
                if key in self._days:
                    self._days.move_to_end(key)
                    return self._days[key]
                making = self._making.get(key)
                if making is None:  # this request makes it
                    self._making[key] = making = Event()
                    break
            making.wait()  # made by another request: kept then, unless an order came
        try:
            return self._make(location_id, day, key)
        finally:
            with self._lock:
                del self._making[key]
            making.set()

    def _make(self, location_id: int, day: date, key: tuple[int, date]
              ) -> list[ServedReceipt]:
        tz = world.location(location_id).tz
        with self._lock:
            posted = list(self._posted.get(key, ()))
        receipts = service_day(location_id, day, self.data) + posted
        served = sorted((
            ServedReceipt(r.date_time, r.transaction_id, _utc(r.date_time, tz),
                          ENCODER.encode(wire_receipt(r, self.data)))
            for r in receipts), key=lambda r: (r.wall_clock, r.transaction_id))
        with self._lock:
            if len(self._posted.get(key, ())) == len(posted):  # no order booked meanwhile
                self._days[key] = served
                while len(self._days) > self.days_kept:
                    self._days.popitem(last=False)
        return served

    def calendar_date(self, location_id: int, day: date) -> list[ServedReceipt]:
        """Receipts stamped on a calendar date: from that service day and the one before."""
        rows = [r for d in (day - timedelta(days=1), day)
                for r in self.service_day(location_id, d) if r.wall_clock.date() == day]
        rows.sort(key=lambda r: (r.wall_clock, r.transaction_id))
        return rows

    def cursor_key(self, location_id: int, transaction_id: str) -> tuple[datetime, str]:
        day = service_day_of(transaction_id)
        for c in self.data.corrections:  # a corrected receipt is served on its new day
            if (c.location_id, c.transaction_id) == (location_id, transaction_id):
                day = c.date_time.date()
        if day is not None:
            for r in self.service_day(location_id, day):
                if r.transaction_id == transaction_id:
                    return r.wall_clock, r.transaction_id
        raise UnknownCursor(f"afterTransactionID {transaction_id!r} is not a receipt of "
                            f"location {location_id}")

    def window(self, location_id: int, after: datetime, before: datetime,
               after_transaction_id: str | None = None,
               server: ServerProfile | None = None) -> Iterator[bytes]:
        """Encoded receipts with after < dateTime < before, in served order, after the cursor.

        Naive ``after``/``before`` are read as the location's wall clock; aware ones are
        compared as instants. ``server`` may read the bounds as inclusive, order by
        ``transactionId``, or serve the cursor's own row again.
        """
        server = server or ServerProfile()
        tz: ZoneInfo = world.location(location_id).tz
        after, before = max(after, _bound(FIRST_DAY, after)), min(before, _bound(LAST_DAY, before))
        if after > before or after == before and not server.inclusive_bounds:
            return  # the window has no day the POS has receipts of
        after_utc = _as_utc(after, tz)
        before_utc = _as_utc(before, tz)
        first = after.astimezone(tz).date() if after.tzinfo else after.date()
        last = before.astimezone(tz).date() if before.tzinfo else before.date()
        cursor = None
        if after_transaction_id:
            cursor = self.cursor_key(location_id, after_transaction_id)
            if not server.order_by_id:
                first = max(first, cursor[0].date())

        def in_window(r: ServedReceipt) -> bool:
            if server.inclusive_bounds:
                return after_utc <= r.utc <= before_utc
            return after_utc < r.utc < before_utc

        def rows() -> Iterator[ServedReceipt]:
            day = first - timedelta(days=1)
            while day <= last + timedelta(days=1):
                yield from filter(in_window, self.calendar_date(location_id, day))
                day += timedelta(days=1)

        def key(r: ServedReceipt):
            return r.transaction_id if server.order_by_id else (r.wall_clock, r.transaction_id)

        served = sorted(rows(), key=key) if server.order_by_id else rows()
        start = None if cursor is None else cursor[1] if server.order_by_id else cursor
        for r in served:
            if start is not None and (key(r) < start if server.repeat_cursor_row
                                      else key(r) <= start):
                continue
            yield r.body


FIRST_DAY, LAST_DAY = date(1970, 1, 1), date(2199, 12, 31)
"""The days the sandbox has receipts of; a window beyond them (year 1, year 9999) is empty."""


def _bound(day: date, like: datetime) -> datetime:
    """Midnight of ``day``, naive or in UTC like ``like`` (so the two compare)."""
    bound = datetime(day.year, day.month, day.day)
    return bound.replace(tzinfo=UTC) if like.tzinfo else bound


def _utc(wall_clock: datetime, tz: ZoneInfo) -> datetime:
    """The naive UTC instant of a wall-clock time at the location (DST-correct).

    In the autumn hour that occurs twice the first occurrence is taken (fold=0); a time
    inside the spring gap is read with the offset before the gap, as ``zoneinfo`` does.
    """
    return wall_clock.replace(tzinfo=tz).astimezone(UTC).replace(tzinfo=None)


def _as_utc(value: datetime, tz: ZoneInfo) -> datetime:
    if value.tzinfo is None:
        return _utc(value, tz)
    return value.astimezone(UTC).replace(tzinfo=None)
