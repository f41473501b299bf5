"""What ``pos-etl load`` shows while it runs: on a terminal a progress bar of the business
dates with elapsed time, rate and ETA (rich); elsewhere (a log file, CI) plain lines
that say the same."""

from __future__ import annotations

import re
import sys
import time
from datetime import timedelta
from typing import TextIO

from pipeline.untrusted import for_terminal

REVENUE = re.compile(r"^revenue: ([\d,]+)/([\d,]+) business dates x (\d+) locations, "
                     r"([\d,]+) receipts")


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=int(seconds)))


class LoadProgress:
    """A ``progress`` callback for ``run_load``; use it as a context manager."""

    def __init__(self, stream: TextIO | None = None, plain: bool | None = None):
        self.stream = stream or sys.stderr
        self.plain = not self.stream.isatty() if plain is None else plain
        self.started = time.monotonic()
        self._bar = None
        self._task = None

    def __enter__(self) -> LoadProgress:
        self.started = time.monotonic()
        if not self.plain:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("revenue"), BarColumn(), MofNCompleteColumn(),
                TextColumn("dates"), TextColumn("{task.fields[receipts]:,} receipts"),
                TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(),
                console=Console(file=self.stream), transient=False)
            self._bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    def __call__(self, line: str) -> None:
        match = REVENUE.match(line)
        if match is None:
            self._print(line)
            return
        done, total, receipts = _int(match[1]), _int(match[2]), _int(match[4])
        elapsed = time.monotonic() - self.started
        rate = f"{receipts / elapsed:,.0f} receipts/s" if elapsed > 0 else ""
        if self._bar is not None:
            if self._task is None:
                self._task = self._bar.add_task("revenue", total=total, receipts=0, rate="")
            self._bar.update(self._task, completed=done, receipts=receipts, rate=rate)
            return
        eta = elapsed / done * (total - done) if done else 0.0
        self._print(f"{line.split(' (')[0]} ({_clock(elapsed)} elapsed, {rate}"
                    + (f", about {_clock(eta)} to go)" if done < total else ")"))

    def _print(self, line: str) -> None:
        line = for_terminal(line)  # a POS's error answer may carry escape sequences
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)
