"""The cash book (rpt_cash_book): the sandbox's drawer, counted every night, balances on
every business date except its deliberate short counts, which the warn check names; a
business date the lake lacks breaks the book instead of showing as a difference."""

from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal

import duckdb
import pytest

from pipeline.sqlrunner.checks import run_check
from pipeline.warehouse.project import shipped
from pos_sandbox.receipts import CASH_SHORT, SandboxData, cash_short, receipts_on, service_day
from tests.conftest import loaded_warehouse

FIRST, LAST = date(2026, 9, 1), date(2026, 9, 7)
HOLE = date(2026, 9, 4)  # not loaded
LOCATIONS = [1001, 1002, 1003]
TRUTH = SandboxData()


@pytest.fixture(scope="module")
def built(sandbox_url, tmp_path_factory):
    data = tmp_path_factory.mktemp("cash") / "data"
    loaded_warehouse(sandbox_url, data, FIRST, HOLE - timedelta(days=1), LOCATIONS)
    return loaded_warehouse(sandbox_url, data, HOLE + timedelta(days=1), LAST, LOCATIONS)


def rows(settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        return con.execute(sql).fetchall()


def short_counts() -> dict[tuple[int, date], Decimal]:
    """The business dates (calendar days: the tests' config) of the sandbox's deliberate
    short counts: the date its count was recorded on."""
    found = {}
    for loc in LOCATIONS:
        day = FIRST - timedelta(days=1)
        while day <= LAST:
            if cash_short(loc, day, TRUTH):
                count = next(r for r in service_day(loc, day, TRUTH)
                             if r.transaction_type == "Bargeldzählung")
                found[(loc, count.date_time.date())] = -CASH_SHORT
            day += timedelta(days=1)
    # a count that starts a book (the first, the first after the hole) shows none
    return {k: v for k, v in found.items()
            if FIRST < k[1] <= LAST and k[1] not in (HOLE, HOLE + timedelta(days=1))}


def test_the_cash_book_balances_except_on_the_deliberate_short_counts(built):
    book = rows(built, "select location_id, business_date, opening_cash, cash_takings, "
                       "cash_deposits, cash_withdrawals, cash_difference, closing_cash "
                       "from rpt_cash_book order by 1, 2")
    assert {(loc, day) for loc, day, *_ in book} == {
        (loc, FIRST + timedelta(days=n)) for loc in LOCATIONS
        for n in range((LAST - FIRST).days + 1) if FIRST + timedelta(days=n) != HOLE}
    # the book is unknown until a location's first count, and again after the hole
    unknown = {(loc, day) for loc, day, *_, difference, _ in book if difference is None}
    restarts = {(loc, day) for loc in LOCATIONS for day in (FIRST, HOLE + timedelta(days=1))}
    assert unknown == restarts
    assert {(loc, day): d for loc, day, *_, d, _ in book if d} == short_counts()
    assert short_counts()  # the sandbox's range has some
    for _, _, opening, takings, deposits, withdrawals, difference, closing in book:
        if opening is not None:
            assert closing == opening + takings + deposits + withdrawals + difference


def test_cash_takings_are_the_cash_payments_of_the_settlements(built):
    truth: dict[tuple[int, date], Decimal] = defaultdict(Decimal)
    for loc in LOCATIONS:
        day = FIRST
        while day <= LAST:
            for r in receipts_on(loc, day, TRUTH):
                if r.transaction_type in ("Abrechnen", "RechnungZurückholen"):
                    truth[(loc, day)] += sum((p.amount for p in r.payments
                                              if p.payment_type.name == "Bar"), Decimal(0))
            day += timedelta(days=1)
    got = {(loc, day): takings for loc, day, takings in rows(
        built, "select location_id, business_date, cash_takings from rpt_cash_book")}
    assert got == {k: v for k, v in truth.items() if k[1] != HOLE}


def test_the_warn_check_names_the_days_a_count_differs(built):
    check = next(c for c in shipped().checks if c.name == "cash_count_matches_the_book")
    assert check.severity == "warn"
    with duckdb.connect(str(built.warehouse.warehouse_path), read_only=True) as con:
        outcome = run_check(con, check, shipped().sources.keys)
        never_negative = run_check(con, next(c for c in shipped().checks
                                             if c.name == "cash_never_negative"))
    assert {(w.get("location_id"), w.get("business_date")) for w in outcome.where} \
        == set(short_counts())
    assert never_negative.passed


def test_the_records_are_read_in_the_order_they_happened(built):
    """A calendar business date holds the night's count of the day before (after
    midnight), and most of its takings after that count; the Kassabuch texts and
    accounts arrive."""
    kinds = rows(built, "select movement_kind, movement_text, fibu_account_nr "
                        f"from fct_cash_movements where location_id = 1001 "
                        f"and business_date = '{FIRST + timedelta(days=1)}' "
                        "order by entry_number")
    order = [k for k, *_ in kinds]
    assert "takings" in order[order.index("count"):]
    assert ("withdrawal", "Geldtransit Bank", "1460") in kinds
    assert "terminal_cut" in order
