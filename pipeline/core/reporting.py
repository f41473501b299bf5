"""What a run tells the person who started it while it runs, as typed values.

The assets hold a ``Reporter`` (the Dagster resource ``reporter``) and call it with what
happened: a business date done, a partition that failed, a line worth saying. The one of a
code location says nothing (the daemon's runs have the Dagster UI); ``pos-etl load``
passes its own (``pipeline.orchestration.progress.LoadProgress``: a progress bar on a
terminal, plain lines elsewhere). Nothing is parsed back out of a log line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipeline.core.outcomes import FailedPartition


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


@dataclass(frozen=True)
class ModelBuilt:
    """A model of the warehouse build is done (dbt's line per model)."""

    name: str
    n: int
    """How many models are done with it (the partitioned ones first), of ``total``."""
    total: int
    materialized: str
    rows: int | None
    """Its rows (None: a view, or a model the file does not store)."""
    seconds: float | None = None
    """How long it took (None: a partitioned model, computed with the others by batch)."""
    partitions: int | None = None
    """Partitions computed (a partitioned model; the others kept)."""

    def __str__(self) -> str:
        what = self.materialized + (
            f", {self.partitions:,} partition{'s' * (self.partitions != 1)} computed"
            if self.partitions is not None else "")
        rows = "" if self.rows is None else f" {self.rows:,} rows"
        took = "" if self.seconds is None else f" in {self.seconds:.2f} s"
        return f"warehouse: {self.n} of {self.total} {self.name} ({what}){rows}{took}"


class Reporter:
    """Says nothing: the reporter of the runs the daemon starts."""

    def phase(self, name: str) -> None:
        """A phase of the command begins (``build``: the warehouse build's run)."""

    def model(self, built: ModelBuilt) -> None:
        """A model of the warehouse build is done."""

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

    def model(self, built: ModelBuilt) -> None:
        self.write(str(built))

    def say(self, line: str) -> None:
        self.write(line)
