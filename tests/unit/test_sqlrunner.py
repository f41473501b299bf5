"""The SQL runner (``pipeline.sqlrunner``) runs another project's models: a shop's orders,
read from a schema ``raw``, partitioned by shop and day. Nothing of the POS, the lake or
the config comes with it: what the models read is given as ``Sources``."""

from __future__ import annotations

import ast
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from pipeline.sqlrunner import ModelError, Project, Sources, build_order, run_checks
from pipeline.sqlrunner.checks import Where
from pipeline.sqlrunner.models import materialize
from pipeline.sqlrunner.unit import model_views, run_unit_test

SOURCES = Sources("raw", {"orders": "shop_days"}, keys=("shop_id", "order_date"))

STAGING = """
-- grain: one order
with source as (select * from raw.orders)
select order_id, shop_id, cast(ordered_at as date) as order_date, amount
from source
"""
MART = """
-- grain: one shop's day
select shop_id, order_date, sum(amount) as sales, count(*) as orders
from stg_shop__orders
group by all
"""
MART_YAML = """
models:
  - name: fct_sales_daily
    description: Each shop's sales of a day.
    config:
      materialized: partitioned
      meta: {grain: [shop_id, order_date]}
    columns:
      - {name: sales, description: What the day's orders came to.}
    data_tests:
      - expression_is_true:
          name: a_day_sells
          expression: sales > 0
          config: {severity: warn}
unit_tests:
  - name: a_refund_counts_negative
    model: fct_sales_daily
    given:
      - input: ref('stg_shop__orders')
        rows:
          - {order_id: 1, shop_id: 7, order_date: 2026-03-27, amount: '25.00'}
          - {order_id: 2, shop_id: 7, order_date: 2026-03-27, amount: '-10.00'}
    expect:
      rows:
        - {shop_id: 7, order_date: 2026-03-27, sales: '15.00', orders: 2}
"""
STAGING_YAML = """
models:
  - name: stg_shop__orders
    description: The shop's orders, one row each.
    config: {materialized: partitioned}
"""


def write_project(root: Path, mart: str = MART) -> Path:
    (root / "staging").mkdir(parents=True)
    (root / "marts").mkdir()
    (root / "reports").mkdir()
    (root / "staging" / "stg_shop__orders.sql").write_text(STAGING)
    (root / "staging" / "stg_shop__orders.yml").write_text(STAGING_YAML)
    (root / "marts" / "fct_sales_daily.sql").write_text(mart)
    (root / "marts" / "fct_sales_daily.yml").write_text(MART_YAML)
    (root / "columns.yml").write_text("columns:\n  shop_id: The shop.\n")
    return root


def orders(con, rows=()) -> None:
    """The source table ``raw.orders`` with ``rows``."""
    con.execute("create schema raw")
    con.execute("create table raw.orders (order_id integer, shop_id integer, "
                "ordered_at timestamp, amount decimal(18, 2))")
    for row in rows:
        con.execute("insert into raw.orders values (?, ?, ?, ?)", row)


def test_another_projects_models_are_found_ordered_and_partitioned_by_its_sources(tmp_path):
    project = Project.read(write_project(tmp_path), SOURCES)
    assert build_order(project.models) == ["stg_shop__orders", "fct_sales_daily"]
    staging, mart = project.models["stg_shop__orders"], project.models["fct_sales_daily"]
    assert staging.source_deps == {"orders"} and staging.area == "shop_days"
    assert mart.model_deps == {"stg_shop__orders"} and mart.area == "shop_days"
    assert project.dictionary.column("fct_sales_daily", "shop_id") == "The shop."
    assert {c.name for c in project.checks} == {
        "a_day_sells", "unique_shop_id_order_date"}


def test_its_unit_tests_run_and_a_wrong_expectation_fails(tmp_path):
    project = Project.read(write_project(tmp_path), SOURCES)
    [test] = project.unit_tests
    with model_views(project.models, orders) as con:
        assert run_unit_test(con, project.models, test) == []
        wrong = type(test)(test.name, test.model, test.given,
                           [{**test.expect[0], "sales": "25.00"}])
        missing, found = run_unit_test(con, project.models, wrong)
    assert missing.startswith("expected, not found: ") and "'sales': '25.00'" in missing
    assert found.startswith("found, not expected: ") and "'sales': Decimal('15.00')" in found


def test_its_models_are_built_as_tables_and_its_checks_name_the_failing_partitions(
        tmp_path):
    project = Project.read(write_project(tmp_path / "project"), SOURCES)
    rows = [(1, 7, "2026-03-27 12:00", 25), (2, 7, "2026-03-28 12:00", -30),
            (3, 8, "2026-03-28 13:00", 12)]
    with duckdb.connect(str(tmp_path / "shop.duckdb")) as con:
        orders(con, rows)
        con.execute("create schema staging")
        for name in build_order(project.models):
            materialize(con, project.models, name)
        assert con.execute("select table_schema, table_name from information_schema.tables "
                           "where table_schema <> 'raw' order by all").fetchall() == [
            ("main", "fct_sales_daily"), ("staging", "stg_shop__orders")]
        assert con.execute("select shop_id, order_date, sales from fct_sales_daily "
                           "order by all").fetchall() == [
            (7, date(2026, 3, 27), Decimal("25.00")), (7, date(2026, 3, 28), Decimal("-30.00")),
            (8, date(2026, 3, 28), Decimal("12.00"))]
        outcomes = {o.check.name: o for o in run_checks(con, project.checks, project.models,
                                                        {}, SOURCES.keys)}
    assert outcomes["a_day_sells"].failing_rows == 1
    [where] = outcomes["a_day_sells"].where
    assert where.get("shop_id") == 7 and where.get("order_date") == date(2026, 3, 28)
    assert str(where) == "shop 7 order date 2026-03-28"
    # as a run's metadata keeps it (a JSON store may sort the keys) and reads it back
    stored = dict(sorted(where.as_json().items()))
    assert str(Where.from_json(stored, SOURCES.keys)) == "shop 7 order date 2026-03-28"
    assert outcomes["unique_shop_id_order_date"].passed


def test_a_model_that_reads_what_its_sources_lack_is_refused_by_name(tmp_path):
    mart = MART.replace("from stg_shop__orders", "from stg_shop__orders, raw.refunds")
    with pytest.raises(ModelError, match=r"fct_sales_daily reads raw tables \['refunds'\]"):
        Project.read(write_project(tmp_path, mart), SOURCES)


def test_the_runner_imports_nothing_of_the_pipeline_and_names_nothing_of_the_pos():
    """What makes it another project's runner: it is given its sources and macros."""
    root = Path(__file__).resolve().parents[2] / "pipeline" / "sqlrunner"
    words = ("location", "receipt", "revenue", "lake", "account", "pos-etl", "dbt_like_sql")
    for path in sorted(root.glob("*.py")):
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pipeline"):
                assert node.module.startswith("pipeline.sqlrunner"), (path.name, node.module)
        assert not [w for w in words if w in text.lower()], path.name
