"""The ``pos-etl`` command: sandbox, load, verify, build, export, docs, report, order,
status, demo. Built on click: its usage errors name the option, and a mistyped command
or option gets a suggestion. Dagster, DuckDB and the warehouse are imported when a
command runs, not before the arguments are read: ``--help`` and a usage error answer at
once (``benchmarks/run.py --only cli``)."""

from __future__ import annotations

import logging
import signal
import sys
import threading
import warnings

import click

from pipeline.cli import books, outputs, runs  # noqa: F401 (they declare their commands)
from pipeline.cli.base import cli
from pipeline.core import stops
from pipeline.core.outcomes import ConfigError, UsageError
from pipeline.core.untrusted import for_terminal
from pos_sandbox.cli import sandbox_command

BACKFILL_BETA = r"Parameter `backfill_policy` of function `asset` is currently in beta"
"""Dagster's note that the revenue asset's backfill policy is a Beta feature
(``pipeline.orchestration.assets.revenue``): for its code location's log, not the terminal."""

cli.add_command(sandbox_command)


def _terminate(signum, frame) -> None:
    raise stops.Terminated


class _NotAnInterrupt(logging.Filter):
    """Drops the record of an error that Ctrl-C or SIGTERM itself caused: SQLAlchemy's pool
    logs, with its traceback, the interrupt (``KeyboardInterrupt``, or Dagster's own
    during a step) that stopped it closing a connection of Dagster's storage. The command
    says ``stopped`` in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and stops.is_interrupt(record.exc_info[1]))


class _Stderr(logging.StreamHandler):
    """Writes to the ``sys.stderr`` of the moment (as Python's last resort does)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def quiet_interrupts() -> None:
    """SQLAlchemy's warnings and errors to stderr as Python's last resort prints them, but
    not those of an interrupt (``_NotAnInterrupt``); once per process."""
    logger = logging.getLogger("sqlalchemy")
    if not any(isinstance(f, _NotAnInterrupt) for h in logger.handlers for f in h.filters):
        handler = _Stderr()
        handler.setLevel(logging.WARNING)
        handler.addFilter(_NotAnInterrupt())
        logger.addHandler(handler)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``pos-etl``: returns the exit code; every error is one line on
    stderr, no traceback (2 for a configuration or usage error, 1 for a failure, 130 for
    Ctrl-C, 143 for SIGTERM)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    # The program's own choice for its process (Dagster is not imported yet: the message
    # alone says which warning).
    warnings.filterwarnings("ignore", message=BACKFILL_BETA)
    quiet_interrupts()
    with stops.armed():  # no Ctrl-C lost (pipeline.core.stops)
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    try:
        code = cli.main(args=argv, prog_name="pos-etl", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except click.ClickException as exc:  # a usage error: click names the option
        exc.show()
        return exc.exit_code
    except ConfigError as exc:
        print(f"configuration error: {for_terminal(str(exc))}", file=sys.stderr)
        return 2
    except UsageError as exc:
        print(f"Error: {for_terminal(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a read-only or full disk, a path that is not a folder
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {for_terminal(where + (exc.strerror or str(exc)))}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, click.Abort) as exc:  # click raises Abort from the former
        # (a RuntimeError: before the next clause)
        return _stopped(exc)
    except Exception as exc:
        if stops.seen():  # the interrupt, turned into an error by the library it passed
            # through (pydantic builds a model's schema in Rust: a Ctrl-C while a command
            # imports its settings comes out as a SchemaError)
            return _stopped(exc)
        # DuckDB's errors, if a command imported it (a command that did not cannot raise one)
        duckdb = sys.modules.get("duckdb")
        if isinstance(exc, RuntimeError) or (duckdb and isinstance(exc, duckdb.Error)):
            from pipeline.core.stops import stopped_query

            if stopped_query(exc):  # DuckDB's answer to a signal during a query
                return _stopped(exc)
        if not (duckdb and isinstance(exc, duckdb.Error)):
            raise
        # a warehouse file that is not one, or is damaged
        print(f"error: {for_terminal(str(exc).splitlines()[0])}", file=sys.stderr)
        return 1


def _stopped(exc: BaseException) -> int:
    """Ctrl-C's or SIGTERM's word and exit code."""
    if stops.terminated() or isinstance(exc, stops.Terminated) \
            or isinstance(exc.__cause__, stops.Terminated):
        print("stopped (SIGTERM)", file=sys.stderr)
        return 143
    print("stopped (Ctrl-C)", file=sys.stderr)
    return 130
