"""The booking formats, one registry: a new format is a module with its ``FORMAT``
(``pipeline.accounting.bookings.BookingFormat``) and an entry here; ``pos-etl export``,
``close-period`` and the CLI's choices derive from it."""

from __future__ import annotations

from pipeline.accounting import bmd, datev
from pipeline.accounting.bookings import BookingFormat

BOOKING_FORMATS: dict[str, BookingFormat] = {f.name: f for f in (datev.FORMAT, bmd.FORMAT)}
