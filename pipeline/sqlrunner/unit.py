"""Model unit tests, in dbt's shape: a model's SQL run on rows given for the models it
reads, its output compared with the rows expected, in DuckDB alone (no sources, no
orchestrator), in milliseconds.

A model's YAML file (beside its SQL) holds them beside its contract, as dbt's ``unit_tests:``::

    unit_tests:
      - name: a_refund_counts_negative
        model: fct_sales_daily
        given:
          - input: ref('fct_orders')
            rows:
              - {shop_id: 7, order_date: 2026-03-27, amount: '-10.00'}
        expect:
          rows:
            - {shop_id: 7, sales: '-10.00'}

Every relation has its real columns and types: the models are created as views over
empty sources (each table with its schema, the macros of a default configuration: the
caller's ``prepare``), so a given
row names only the columns that matter (the others are null) and is cast to the input's
types. An input not given is empty. Each expected row is compared on the columns it names
(as dbt does), the rows as a multiset; numbers compare as numbers (``'10.0'`` equals
``10.00``), ``null`` only with null.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation

import duckdb

from pipeline.sqlrunner.dictionary import Dictionary
from pipeline.sqlrunner.models import (
    STAGING_SCHEMA,
    Model,
    build_order,
    qualify_staging,
)

GIVEN = "given"
"""The schema of the given rows, first on the search path."""
_REF = re.compile(r"^ref\(\s*['\"](?P<name>[A-Za-z0-9_]+)['\"]\s*\)$")


class UnitTestError(Exception):
    """A unit test is malformed; the message names it."""


@dataclass(frozen=True)
class UnitTest:
    name: str
    model: str
    given: dict[str, list[dict]]
    """Input model -> its rows."""
    expect: list[dict]
    description: str = ""


def unit_tests_of(dictionary: Dictionary) -> list[UnitTest]:
    """Every ``unit_tests:`` entry of the project's YAML files."""
    found = []
    for path, entry in dictionary.unit_tests:
        try:
            given = {}
            for item in entry.get("given") or []:
                ref = _REF.match(str(item["input"]).strip())
                if ref is None:
                    raise UnitTestError(f"{path}: unit test {entry['name']}: input "
                                        f"{item['input']!r} is not ref('<model>')")
                given[ref["name"]] = list(item.get("rows") or [])
            found.append(UnitTest(str(entry["name"]), str(entry["model"]), given,
                                  list(entry["expect"].get("rows") or []),
                                  " ".join(str(entry.get("description", "")).split())))
        except (KeyError, TypeError, AttributeError):
            raise UnitTestError(f"{path}: a unit test needs a name, a model, given "
                                f"inputs and expect rows (at {entry!r:.80})") from None
    return found


def model_views(models: dict[str, Model],
                prepare: Callable[[duckdb.DuckDBPyConnection], None]
                ) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with what ``prepare`` creates (the project's macros and its
    sources) and every model as a view over it. With the sources empty (as the unit tests
    have them): each relation with its real columns and types, no rows."""
    con = duckdb.connect()
    con.execute(f"create schema {STAGING_SCHEMA}")
    prepare(con)
    for name in build_order(models):
        model = models[name]
        con.execute(f"create view {model.qualified} as {qualify_staging(model.sql, models)}")
    con.execute(f"create schema {GIVEN}")
    return con


def _same(got: object, want: object) -> bool:
    """A cell against its expected value: numbers as numbers, dates and times by their
    ISO text, the rest by text (``true`` for True)."""
    if got is None or want is None:
        return got is None and want is None
    if isinstance(got, bool) or isinstance(want, bool):
        return str(got).lower() == str(want).lower()
    if isinstance(got, (int, float, Decimal)):
        try:
            return Decimal(str(got)) == Decimal(str(want))
        except InvalidOperation:
            return False
    if isinstance(got, (date, datetime)):
        return got.isoformat() == (want.isoformat() if isinstance(want, (date, datetime))
                                   else str(want))
    return str(got) == str(want)


def run_unit_test(con: duckdb.DuckDBPyConnection, models: dict[str, Model],
                  test: UnitTest) -> list[str]:
    """What differs between the model's rows on the given inputs and the rows expected
    (empty: the test passes)."""
    if test.model not in models:
        raise UnitTestError(f"unit test {test.name}: no model {test.model!r}")
    sql = models[test.model].sql
    for name, rows in test.given.items():
        if name not in models:
            raise UnitTestError(f"unit test {test.name}: no model {name!r} to give rows for")
        types = dict(con.execute(f"select column_name, column_type from "
                                 f"(describe {models[name].qualified})").fetchall())
        con.execute(f"create or replace table {GIVEN}.{name} as "
                    f"select * from {models[name].qualified} limit 0")
        for row in rows:
            unknown = set(row) - set(types)
            if unknown:
                raise UnitTestError(f"unit test {test.name}: {name} has no column "
                                    f"{', '.join(sorted(unknown))}")
            columns = list(row)
            con.execute(f"insert into {GIVEN}.{name} ({', '.join(columns)}) select "
                        + ", ".join(f"cast(? as {types[c]})" for c in columns),
                        [None if row[c] is None else str(row[c]) for c in columns])
        sql = re.sub(rf"(?<![.\w]){re.escape(name)}\b", f"{GIVEN}.{name}", sql)
    result = con.execute(f"select * from ({qualify_staging(sql, models)})")
    names = [d[0] for d in result.description]
    got = [dict(zip(names, row, strict=True)) for row in result.fetchall()]
    wanted = {c for row in test.expect for c in row}
    missing = wanted - set(names)
    if missing:
        return [f"{test.model} has no column {', '.join(sorted(missing))}"]
    left = [{c: row[c] for c in wanted} for row in got]
    differences = []
    for want in test.expect:
        match = next((i for i, have in enumerate(left)
                      if all(_same(have[c], want[c]) for c in want)), None)
        if match is None:
            differences.append(f"expected, not found: {want}")
        else:
            left.pop(match)
    differences += [f"found, not expected: {have}" for have in left]
    for name in test.given:
        con.execute(f"drop table {GIVEN}.{name}")
    return differences
