"""A model's contract lives in its folder's schema.yml, in dbt's shape (#22, item 6)."""

import shutil
import textwrap

import duckdb
import pytest

from pipeline.core.project import MODELS_DIR, STAGES
from pipeline.warehouse import ModelError, discover_models
from pipeline.warehouse.checks import CHECKS, ContractError, checks_of, run_check
from pipeline.warehouse.dictionary import load_dictionary

SCHEMA = textwrap.dedent("""
    version: 2
    models:
      - name: fct_sales
        description: 'Sales.'
        config:
          materialized: table
          meta: {owner: 'team:finance', grain: 'one row per sale_id'}
        data_tests:
          - unique_combination_of_columns:
              combination_of_columns: [shop, sale_id]
          - expression_is_true:
              name: refunds_are_negative
              expression: amount < 0
              config: {severity: warn, where: "kind = 'refund'"}
          - relationships:
              to: dim_shops
              columns: [shop]
        columns:
          - name: kind
            description: 'sale or refund'
            data_tests:
              - not_null
              - accepted_values:
                  values: [sale, refund]
                  config: {severity: warn}
      - name: dim_shops
        description: 'Shops.'
""")


@pytest.fixture
def con():
    with duckdb.connect() as con:
        con.execute("create table dim_shops as select * from (values ('A'), ('B')) s(shop)")
        con.execute("""create table fct_sales as select * from (values
            ('A', 1, 'sale', 10.00), ('A', 1, 'sale', 12.00), ('B', 2, 'refund', 5.00),
            ('C', 3, null, 1.00), ('B', 4, 'gift', 1.00), ('B', 5, 'refund', -3.00))
            s(shop, sale_id, kind, amount)""")
        yield con


def contract(tmp_path, schema: str):
    (tmp_path / "marts").mkdir(exist_ok=True)
    (tmp_path / "marts" / "schema.yml").write_text(schema)
    return load_dictionary(tmp_path, STAGES)


def test_each_data_test_finds_the_rows_that_break_it_with_its_severity(tmp_path, con):
    checks = {c.name: c for c in checks_of(contract(tmp_path, SCHEMA))}
    outcomes = {name: (run_check(con, check).failing_rows, check.blocking)
                for name, check in checks.items()}
    assert outcomes == {
        "unique_shop_sale_id": (1, True),  # sale 1 of shop A twice
        "refunds_are_negative": (1, False),  # only refunds are held to it
        "relationship_to_dim_shops": (1, True),  # shop C
        "not_null_kind": (1, True),
        "accepted_values_kind": (1, False),  # a gift; a null kind is not_null's business
    }


def test_a_malformed_data_test_names_its_model(tmp_path):
    with pytest.raises(ContractError, match="model fct_sales: unknown data test 'unique_ish'"):
        checks_of(contract(tmp_path, SCHEMA.replace("unique_combination_of_columns",
                                                    "unique_ish")))
    with pytest.raises(ContractError, match="refunds_are_negative: severity must be"):
        checks_of(contract(tmp_path, SCHEMA.replace("severity: warn, where",
                                                    "severity: fatal, where")))


def test_the_shipped_contracts_hold_the_checks_with_their_severities():
    checks = {(c.model, c.name): c.blocking for c in CHECKS}
    assert checks[("rpt_daily_close", "day_is_closed")] is False  # a till's fault: warn
    assert checks[("rpt_daily_close", "payments_add_up")] is True  # a model bug: error
    assert checks[("fct_receipts", "one_version_per_receipt")] is True  # one day per receipt
    assert len(checks) == 40


def test_materialization_grain_and_owner_come_from_schema_yml(tmp_path):
    models_dir = tmp_path / "models"
    shutil.copytree(MODELS_DIR, models_dir)
    models = discover_models(models_dir)
    assert models["fct_receipts"].materialized == "partitioned"
    assert models["fct_receipts"].owner == "team:analytics"
    assert models["fct_receipts"].grain.startswith("one row per location_id")
    schema = models_dir / "marts" / "schema.yml"
    schema.write_text(schema.read_text().replace("materialized: partitioned",
                                                 "materialized: incremental", 1))
    with pytest.raises(ModelError, match="model fct_receipts: materialized must be one of"):
        discover_models(models_dir)
