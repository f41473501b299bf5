"""The booking formats, one registry: a new format is a module with its ``FORMAT``
(``pipeline.accounting.bookings.BookingFormat``) and an entry here; ``pos-etl export``,
``close-period`` and the CLI's choices derive from it. The entries name their modules, so
the CLI lists the formats without importing them (``pos-etl --help`` answers at once)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.accounting.bookings import BookingFormat

BOOKING_FORMATS: dict[str, str] = {
    "datev": "pipeline.accounting.datev",
    "bmd": "pipeline.accounting.bmd",
}
"""Each format's name (as ``--format`` takes it) and the module that writes it."""


def booking_format(name: str) -> BookingFormat:
    """The format ``name`` (a key of ``BOOKING_FORMATS``)."""
    found = importlib.import_module(BOOKING_FORMATS[name]).FORMAT
    assert found.name == name, f"{BOOKING_FORMATS[name]}.FORMAT is {found.name!r}"
    return found
