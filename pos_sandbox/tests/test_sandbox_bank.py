"""The sandbox's bank statements as a run's file source sees them."""

from datetime import date, timedelta

import pytest

from pos_sandbox import bank
from pos_sandbox.files import statement_window


@pytest.mark.parametrize("today", [date(2026, 11, 29), date(2026, 11, 30),  # Sunday, Monday
                                   date(2026, 11, 28), date(2026, 11, 25)])  # Saturday, Wed.
def test_a_run_from_yesterday_on_finds_a_statement_whatever_the_weekday(today):
    """``make demo`` loads from yesterday on: on a Sunday or a Monday yesterday was no bank
    day, and a folder without a statement is refused; the window reaches back to Friday."""
    yesterday = today - timedelta(days=1)
    first, last = statement_window(today, yesterday)
    assert last == yesterday and first <= yesterday
    assert bank.statements(1001, first, last)  # at least one statement to load
    assert first == (yesterday if bank.bank_day(yesterday) else date(2026, 11, 27))


def test_a_longer_run_keeps_its_window():
    today = date(2026, 11, 30)
    assert statement_window(today, date(2026, 11, 2)) == (date(2026, 11, 2), date(2026, 11, 29))
    assert statement_window(today, date(2026, 1, 1)) == (date(2026, 10, 26), date(2026, 11, 29))
