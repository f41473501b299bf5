"""What a run tells the person who started it while it runs, as typed values.

The assets hold a ``Reporter`` (the Dagster resource ``reporter``) and call it with what
happened: a business date done, a partition that failed, a line worth saying. The one of a
code location says nothing (the daemon's runs have the Dagster UI); ``pos-etl load``
passes its own (``pipeline.progress.LoadProgress``: a progress bar on a terminal, plain
lines elsewhere). Nothing is parsed back out of a log line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipeline.outcomes import FailedPartition


@dataclass(frozen=True)
class RevenueProgress:
    """The revenue of how many business dates a run has loaded so far."""

    dates_done: int
    dates: int
    locations: int
    receipts: int
    not_tried: int = 0
    """Partitions not tried (the POS unreachable or the key refused): said once, with the
    first failure."""

    def __str__(self) -> str:
        return (f"revenue: {self.dates_done:,}/{self.dates:,} business dates x "
                f"{self.locations} locations, {self.receipts:,} receipts"
                + (f", {self.not_tried:,} partitions not tried (see above)"
                   if self.not_tried else ""))


class Reporter:
    """Says nothing: the reporter of the runs the daemon starts."""

    def revenue(self, progress: RevenueProgress) -> None:
        """The run's revenue so far (after each business date it finished)."""

    def failed(self, area: str, failed: FailedPartition) -> None:
        """A partition (or a snapshot) of ``area`` failed; a request not tried is not
        reported (the first failure said why)."""

    def say(self, line: str) -> None:
        """A line for the person who started the run (a snapshot taken, drift found)."""


class LineReporter(Reporter):
    """Everything as plain lines to ``write``."""

    def __init__(self, write: Callable[[str], None]):
        self.write = write

    def revenue(self, progress: RevenueProgress) -> None:
        self.write(str(progress))

    def failed(self, area: str, failed: FailedPartition) -> None:
        self.write(f"warning: {area} {failed.where}: {failed.failure}")

    def say(self, line: str) -> None:
        self.write(line)
