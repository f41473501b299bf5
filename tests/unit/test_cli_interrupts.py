"""Ctrl-C while Dagster's storage closes a connection: SQLAlchemy's pool logs the
interrupt with a traceback; the CLI's own line (``stopped (Ctrl-C)``) is all a person
sees. Its other warnings still reach stderr."""

import logging
import signal
import sys
import threading
import time

import pytest

from pipeline.cli import quiet_interrupts
from pipeline.core import stops


def test_an_interrupt_logged_by_sqlalchemy_prints_nothing_and_a_warning_still_does(capsys):
    quiet_interrupts()
    quiet_interrupts()  # once per process, however often a command runs
    assert len(logging.getLogger("sqlalchemy").handlers) == 1
    pool = logging.getLogger("sqlalchemy.pool.impl.NullPool")
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        pool.error("Exception closing connection %r", "<conn>", exc_info=True)
    assert capsys.readouterr().err == ""
    from dagster import DagsterExecutionInterruptedError  # what a step gets
    try:
        raise DagsterExecutionInterruptedError
    except DagsterExecutionInterruptedError:
        pool.error("Exception closing connection %r", "<conn>", exc_info=True)
    assert capsys.readouterr().err == ""
    pool.warning("a pool warning")
    assert capsys.readouterr().err == "a pool warning\n"


class _Callback:
    """What SQLAlchemy registers with the garbage collector: code in which an exception
    is printed as "Exception ignored" and dropped."""

    def __del__(self):
        # to the main thread itself, and waited for: the handler runs between these
        # bytecodes (``os.kill`` lets the kernel pick any thread, which may run it later)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pass


def _raising_handler(signum, frame):  # as Dagster's during a step
    raise KeyboardInterrupt


def test_a_ctrl_c_that_a_handler_raised_into_a_gc_callback_is_not_lost(capsys):
    """CI met this: a load Ctrl-C'd after 2 of 51 dates ran on to the end and exited 0."""
    previous = signal.signal(signal.SIGINT, _raising_handler)
    try:
        with stops.armed():
            _Callback()  # dropped at once: its __del__ gets the Ctrl-C
            assert capsys.readouterr().err == ""  # no "Exception ignored ... Traceback"
            with pytest.raises(KeyboardInterrupt):
                stops.check()
        with stops.armed():
            stops.check()  # a new command starts with nothing on record
    finally:
        signal.signal(signal.SIGINT, previous)


def test_without_the_record_the_same_ctrl_c_is_lost(monkeypatch):
    """The hazard the record exists for (if Python ever stopped dropping it, the record
    could go)."""
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: dropped.append(u.exc_type))
    previous = signal.signal(signal.SIGINT, _raising_handler)
    try:
        _Callback()  # no KeyboardInterrupt reaches this frame
        assert dropped == [KeyboardInterrupt]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_that_a_library_turned_into_an_error_stops_the_command_by_name(capsys):
    """CI met this: Ctrl-C while ``pos-etl status`` imported its settings came out of
    pydantic's schema building as a ``SchemaError``, a traceback and exit 1."""
    from pipeline import cli

    @cli.cli.command("wrapped-interrupt")
    def wrapped() -> None:
        try:
            # to the main thread itself (``os.kill`` lets the kernel pick any thread: on a
            # busy machine the handler then ran after a bounded loop had ended), and
            # waited for: the handler raises between the bytecodes of this loop
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                pass
        except KeyboardInterrupt as exc:  # what a library does with it
            raise ValueError("Error building `model` serializer") from exc

    # Python's own handler, as in a pos-etl process (a test worker may have SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert cli.main(["wrapped-interrupt"]) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
        cli.cli.commands.pop("wrapped-interrupt")
    err = capsys.readouterr().err
    assert err == "stopped (Ctrl-C)\n", err


def test_ctrl_c_during_a_commits_turnover_query_stops_the_command(monkeypatch):
    """A commit asks DuckDB for its partitions' turnovers in the main thread, where DuckDB
    answers a Ctrl-C by ending the query with an error: it must stop the command as the
    interrupt, never fail the revenue step as an error and let the command run on."""
    import duckdb

    from pipeline.areas.revenue import macros
    from pipeline.areas.revenue.tables import RECEIPT_ITEMS, RECEIPTS

    class Stopped:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def execute(self, sql):
            raise duckdb.InterruptException("Query interrupted")

    monkeypatch.setattr(macros, "_cursor", Stopped)
    with pytest.raises(KeyboardInterrupt):
        macros.partition_turnovers([(RECEIPTS.empty_table(), RECEIPT_ITEMS.empty_table())])
