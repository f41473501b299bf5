"""The models' unit tests (``unit_tests:`` in each model's YAML, dbt_like_sql/*/*.yml), each on its
given rows in DuckDB alone: no sandbox, lake or Dagster (``make test-models``)."""

from dataclasses import replace

import pytest

from pipeline.sqlrunner.unit import run_unit_test
from pipeline.warehouse import shipped
from pipeline.warehouse.project import empty_warehouse

MODELS = shipped().models
TESTS = shipped().unit_tests


@pytest.fixture(scope="module")
def con():
    with empty_warehouse(MODELS) as connection:
        yield connection


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_the_model_makes_the_expected_rows(con, test):
    assert run_unit_test(con, MODELS, test) == [], test.description


def test_a_changed_expected_value_fails_its_unit_test(con):
    """The runner can fail: one expected figure changed by a cent is found missing."""
    test = next(t for t in TESTS if t.expect and any(
        isinstance(v, str) and "." in v for v in t.expect[0].values()))
    row = dict(test.expect[0])
    column = next(c for c, v in row.items() if isinstance(v, str) and "." in v)
    row[column] = str(float(row[column]) + 0.01)
    differences = run_unit_test(con, MODELS, replace(test, expect=[row, *test.expect[1:]]))
    assert any(d.startswith("expected, not found") for d in differences)
    assert any(d.startswith("found, not expected") for d in differences)


def test_the_models_with_their_edge_cases_have_unit_tests():
    covered = {t.model for t in TESTS}
    assert {"fct_turnover_daily", "rpt_vat_by_rate_current", "rpt_daily_close_current",
            "rpt_cash_book_current", "rpt_vat_by_rate", "fct_receipt_revenue",
            "rpt_payment_reconciliation", "rpt_period_corrections",
            "fct_voucher_liability_daily"} <= covered
