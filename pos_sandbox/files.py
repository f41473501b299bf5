"""What the sandbox writes as files for the pipeline's file sources (``pipeline.sources``
with ``transport="files"``): the bank's statements of each configured account that is the
sandbox's own (``pos_sandbox.bank.account_iban``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

from pos_sandbox import bank, world

WINDOW_DAYS = 35
"""The most days a sandbox run's statements cover (writing them costs the receipts of each
day: a month of three locations is some 2 s)."""


def statement_window(today: date, start: date) -> tuple[date, date]:
    """The days the sandbox's statements cover: from the settings' first business date
    (``[schedule] start_date``), at most ``WINDOW_DAYS`` back, to yesterday; and at least
    the last bank day: a bank writes no statement on a weekend, and a run on a Sunday or
    a Monday from yesterday on would find no statement file (which a load refuses)."""
    last = today - timedelta(days=1)
    latest = last
    while not bank.bank_day(latest):
        latest -= timedelta(days=1)
    return min(max(start, last - timedelta(days=WINDOW_DAYS - 1)), latest), last


def writer(source: str, folder: str, settings) -> Callable[[], None] | None:
    """A call that writes ``source``'s files into ``folder`` once (later calls do
    nothing), for the locations of ``settings`` (a ``pipeline`` Settings); None for a
    source the sandbox writes nothing for."""
    if source != "bank":
        return None
    mine = {bank.account_iban(loc.id): loc.id for loc in settings.locations
            if world.location(loc.id) is not None}
    wanted = [mine[iban] for iban in settings.bank_accounts if iban in mine]
    done, lock = [], threading.Lock()

    def write() -> None:
        with lock:
            if not done:
                first, last = statement_window(date.today(), settings.schedule.start_date)
                bank.write_statements(Path(folder), wanted, first, last)
                done.append(True)

    return write
