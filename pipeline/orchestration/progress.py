"""What ``pos-etl load`` shows while it runs: on a terminal a progress bar of the business
dates with elapsed time, rate and ETA (rich); elsewhere (a log file, CI) plain lines
that say the same. Then its summary (``print_summary``)."""

from __future__ import annotations

import sys
import time
from datetime import timedelta
from typing import TextIO

from pipeline.areas import SNAPSHOTS
from pipeline.core.money import format_money
from pipeline.core.reporting import LineReporter, ModelBuilt, RevenueProgress
from pipeline.core.untrusted import for_terminal
from pipeline.orchestration.assets.revenue import REVENUE_STEP

SNAPSHOT_AREAS = [area.name for area in SNAPSHOTS]


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=int(seconds)))


class LoadProgress(LineReporter):
    """The reporter of ``pos-etl load`` (``run_load``'s ``progress``): a progress bar of
    the business dates on a terminal, plain lines elsewhere; use it as a context manager."""

    def __init__(self, stream: TextIO | None = None, plain: bool | None = None):
        super().__init__(self._print)
        self.stream = stream or sys.stderr
        self.plain = not self.stream.isatty() if plain is None else plain
        self.started = time.monotonic()
        self._bar = None
        self._task = None

    def __enter__(self) -> LoadProgress:
        self.started = time.monotonic()
        if not self.plain:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._open(TextColumn("revenue"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("dates"), TextColumn("{task.fields[receipts]:,} receipts"),
                       TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                       TextColumn("ETA"), TimeRemainingColumn())
        return self

    def _open(self, *columns) -> None:
        """A bar of these columns, below the lines said so far."""
        from rich.console import Console
        from rich.progress import Progress

        self._bar = Progress(*columns, console=Console(file=self.stream), transient=False)
        self._bar.__enter__()
        self._task = None

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    def phase(self, name: str) -> None:
        """The build begins: the revenue bar stays as it ended (printed once), and the
        build's bar of models follows it (plain lines need no change)."""
        if self.plain:  # its lines say what they are
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

        self.__exit__(None, None, None)
        self._open(TextColumn(name), BarColumn(), MofNCompleteColumn(), TextColumn("models"),
                   TimeElapsedColumn(), TextColumn("{task.fields[model]}"))

    def model(self, built: ModelBuilt) -> None:
        if self._bar is None:
            super().model(built)
            return
        if self._task is None:
            self._task = self._bar.add_task("build", total=built.total, model="")
        self._bar.update(self._task, completed=built.n, model=built.name)

    def revenue(self, progress: RevenueProgress) -> None:
        done, total = progress.dates_done, progress.dates
        elapsed = time.monotonic() - self.started
        rate = f"{progress.receipts / elapsed:,.0f} receipts/s" if elapsed > 0 else ""
        if self._bar is not None:
            if self._task is None:
                self._task = self._bar.add_task("revenue", total=total, receipts=0, rate="")
            self._bar.update(self._task, completed=done, receipts=progress.receipts, rate=rate)
            return
        eta = elapsed / done * (total - done) if done else 0.0
        self._print(f"{progress} ({_clock(elapsed)} elapsed, {rate}"
                    + (f", about {_clock(eta)} to go)" if done < total else ")"))

    def _print(self, line: str) -> None:
        line = for_terminal(line)  # a POS's error answer may carry escape sequences
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)


def print_summary(report, stream=None) -> None:
    """The summary: on a terminal a table of what was loaded and built, then every
    failure by name; elsewhere the plain lines of ``LoadReport.summary``."""
    stream = stream or sys.stdout
    if not stream.isatty():
        print(for_terminal(report.summary()), file=stream, flush=True)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="pos-etl load", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    if report.days and report.drift is None:
        failed = len(report.failed_partitions)
        table.add_row("revenue", f"{'stopped' if report.interrupted else 'failed'}: "
                                 f"{report.dates_done} of {report.days} dates done"
                      if REVENUE_STEP in report.failed_steps and not report.partitions else
                      f"{report.partitions - failed:,} of {report.partitions:,} partitions "
                      f"({report.days} dates x {report.locations} locations)")
        table.add_row("receipts", f"{report.receipts:,}")
        table.add_row("turnover_net", f"{format_money(report.turnover_net)} EUR")
    for area in SNAPSHOT_AREAS:
        if area in report.snapshots:
            table.add_row(area, ", ".join(f"{n:,} {t}" for t, n in report.snapshots[area].items()))
    if report.warehouse_path:
        table.add_row("warehouse", f"{report.models} models, {report.partitions_computed} "
                                   f"partitions computed: {report.warehouse_path}")
    colour = "red" if not report.ok else \
        "yellow" if report.warned_checks or report.warnings else "green"
    table.add_row("result", f"[{colour}]{report.result}[/{colour}]")
    console = Console(file=stream)
    console.print(table)
    for line in for_terminal(report.summary()).splitlines():
        if line.startswith(("  ", "verify")):
            console.print(line, markup=False, highlight=False)
    console.print(report.runs_line, markup=False, highlight=False)
