"""What a build replaces, counts and shows the models after it is the rows of the groups
it computes now, and no others: ``keys_predicate`` selects them by a table of their keys.
Rows of a neighbouring day, another location or a key spelled alike stay out."""

from datetime import date

import duckdb
import pytest

from pipeline.warehouse.lakeviews import keys_predicate

KEYS = ("location_id", "business_date")


@pytest.fixture
def con():
    with duckdb.connect() as con:
        con.execute("""
            create table rows as
            select location_id, business_date, 1 as n
            from range(1001, 1006) as l(location_id),
                 range(date '2026-11-01', date '2026-11-11', interval 1 day) as d(day),
                 lateral (select cast(day as date) as business_date)""")
        yield con


def _selected(con, predicate: str) -> set[tuple[int, date]]:
    return set(con.execute(f"select location_id, business_date from rows "
                           f"where {predicate}").fetchall())


def test_the_rows_of_exactly_the_groups_named_are_selected(con):
    groups = ["location_id=1001/business_date=2026-11-02",
              "location_id=1001/business_date=2026-11-03",
              "location_id=1003/business_date=2026-11-09",
              "location_id=1005/business_date=2026-11-02"]
    predicate = keys_predicate(con, KEYS, groups, "_groups")
    assert _selected(con, predicate) == {
        (1001, date(2026, 11, 2)), (1001, date(2026, 11, 3)), (1003, date(2026, 11, 9)),
        (1005, date(2026, 11, 2))}
    # everything else, and nothing of them, with the predicate negated (a model's rows
    # outside the groups it was computed for are named by it)
    assert len(_selected(con, f"not {predicate}")) == 5 * 10 - 4


def test_a_second_selection_by_the_same_name_replaces_the_first(con):
    first = keys_predicate(con, KEYS, ["location_id=1002/business_date=2026-11-05"], "_g")
    second = keys_predicate(con, KEYS, ["location_id=1004/business_date=2026-11-06"], "_g")
    assert _selected(con, second) == {(1004, date(2026, 11, 6))}
    assert _selected(con, first) == set()  # the table it read holds the second's groups


def test_no_groups_select_no_rows(con):
    assert _selected(con, keys_predicate(con, KEYS, [], "_none")) == set()


def test_text_keys_are_compared_as_text():
    with duckdb.connect() as con:
        con.execute("create table rows as select * from (values ('a''b', date '2026-11-01'), "
                    "('ab', date '2026-11-01'), ('7', date '2026-11-01')) t(code, day)")
        predicate = keys_predicate(con, ("code", "day"), ["code=a'b/day=2026-11-01"], "_t")
        assert con.execute(f"select code from rows where {predicate}").fetchall() == [("a'b",)]
