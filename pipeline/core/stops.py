"""Ctrl-C and SIGTERM that are not lost.

A Python signal handler that raises (Python's own for SIGINT, Dagster's during a step)
raises in whatever the main thread runs at that instant. When that is a garbage
collector's callback or a ``__del__`` (SQLAlchemy registers such callbacks for Dagster's
storage), Python prints "Exception ignored in ..." and drops the exception: the command
runs on as if no key had been pressed. CI met this: a load Ctrl-C'd after 2 of 51 dates
finished all 51 and exited 0.

``armed()`` is the ``pos-etl`` process's own record of signals, which no handler can
lose: ``signal.set_wakeup_fd``, where the interpreter's C-level handler writes each
signal's number whatever the Python handler then does. The long loops (each business
date of a load, each model of a build) and the runs of a command ask ``check()``, which
raises the interrupt once a signal arrived. The same context replaces the interpreter's
"Exception ignored" print for a dropped interrupt (the signal is on record; nothing more
to say) and passes every other one to the previous hook. Both are the command's own
choice for its own process: set on entry, restored on exit, never in a Dagster run
worker or the UI, whose processes Dagster owns.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Terminated(KeyboardInterrupt):
    """SIGTERM: stop as Ctrl-C does (every ``finally`` runs, scratch files go)."""


class _Record:
    def __init__(self) -> None:
        self.read_fd: int | None = None
        self.seen: list[int] = []

    def drain(self) -> list[int]:
        if self.read_fd is not None:
            while True:
                try:
                    data = os.read(self.read_fd, 512)
                except BlockingIOError:
                    break
                if not data:
                    break
                self.seen.extend(data)
        return self.seen


_record = _Record()


def seen() -> list[int]:
    """The signals (numbers) that arrived while the command ran, oldest first."""
    return list(_record.drain())


def terminated() -> bool:
    return signal.SIGTERM in seen()


def check() -> None:
    """Raise the interrupt if Ctrl-C or SIGTERM arrived, even one a handler lost."""
    signals = seen()
    if signal.SIGTERM in signals:
        raise Terminated
    if signal.SIGINT in signals:
        raise KeyboardInterrupt


def is_interrupt(exc: BaseException | None) -> bool:
    """Whether ``exc`` is what a signal handler raised: ``KeyboardInterrupt``, or Dagster's
    ``DagsterExecutionInterruptedError`` (a ``BaseException`` too; no other
    ``BaseException`` but ``SystemExit`` and ``GeneratorExit`` is raised in a command)."""
    return exc is not None and not isinstance(exc, Exception) and not isinstance(
        exc, (SystemExit, GeneratorExit))


@contextmanager
def armed() -> Iterator[None]:
    """Record every signal for the duration (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    previous_hook = sys.unraisablehook

    def hook(unraisable) -> None:
        if is_interrupt(unraisable.exc_value) and seen():
            return  # a dropped Ctrl-C or SIGTERM: on record, check() raises it
        previous_hook(unraisable)

    _record.read_fd, _record.seen = read_fd, []
    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        signal.set_wakeup_fd(previous_fd)
        _record.read_fd, _record.seen = None, []
        os.close(read_fd)
        os.close(write_fd)


def stopped_query(exc: BaseException) -> bool:
    """``exc`` is how DuckDB ends a query that a signal stopped: Python's handler ran
    during the query (Ctrl-C, or SIGTERM where Dagster maps it to Ctrl-C's), and DuckDB
    answers with a plain ``RuntimeError`` of this text; ``connection.interrupt()`` with its
    ``InterruptException``. Whoever runs a query in the main thread turns it back into
    the interrupt (``KeyboardInterrupt``), or the stop is lost as an error."""
    duckdb = sys.modules.get("duckdb")  # (a process that did not import it ran no query)
    return bool(duckdb and isinstance(exc, duckdb.InterruptException)) or (
        type(exc) is RuntimeError and str(exc) == "Query interrupted")
