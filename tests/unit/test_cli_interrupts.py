"""Ctrl-C while Dagster's storage closes a connection: SQLAlchemy's pool logs the
interrupt with a traceback; the CLI's own line (``stopped (Ctrl-C)``) is all a person
sees. Its other warnings still reach stderr."""

import logging

from pipeline.cli import quiet_interrupts


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
    pool.warning("a pool warning")
    assert capsys.readouterr().err == "a pool warning\n"
