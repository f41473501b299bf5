"""A model's contract lives in its YAML file beside its SQL, in dbt's shape (#22, item 6;
#58, item 5)."""

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
import sqlglot

from pipeline.core.project import MODELS_DIR
from pipeline.sqlrunner import STAGES
from pipeline.sqlrunner.checks import DataTestError, checks_of, run_check
from pipeline.sqlrunner.dictionary import DictionaryError, load_dictionary
from pipeline.warehouse import ModelError, discover_models
from pipeline.warehouse.project import empty_warehouse, read_project, shipped

ROOT = Path(__file__).resolve().parents[2]

SCHEMA = textwrap.dedent("""
    version: 2
    models:
      - name: fct_sales
        description: 'Sales.'
        config:
          materialized: table
          meta: {owner: 'team:finance', grain: [shop, sale_id], rows: 'one row per sale'}
        data_tests:
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
    with pytest.raises(DataTestError, match="model fct_sales: unknown data test 'unique_ish'"):
        checks_of(contract(tmp_path, SCHEMA.replace("expression_is_true", "unique_ish")))
    with pytest.raises(DataTestError, match="refunds_are_negative: severity must be"):
        checks_of(contract(tmp_path, SCHEMA.replace("severity: warn, where",
                                                    "severity: fatal, where")))


def test_the_shipped_contracts_hold_the_checks_with_their_severities():
    checks = {(c.model, c.name): c.blocking for c in shipped().checks}
    assert checks[("rpt_daily_close_current", "day_is_closed")] is False  # the till's: warn
    assert checks[("rpt_daily_close_current", "payments_add_up")] is True  # a model bug
    assert checks[("fct_receipts", "one_version_per_receipt")] is True  # one day per receipt
    assert checks[("dim_bank_statements", "statements_chain")] is False  # the bank's: warn
    assert checks[("rpt_bank_reconciliation", "money_arrived")] is False  # the bank's: warn
    assert checks[("rpt_bank_transit_monthly", "transit_nets_to_zero")] is False  # warn
    assert len(checks) == 122  # (the grains of fct_receipt_revenue, fct_receipt_payments,
    # rpt_booking_receipts,
    # the three reports as closed and their ledger tables, rpt_period_changes;
    # every_booking_line_ties_to_its_receipts; the bank's nine models, their chain, the
    # reconciliation's reasons and open items, the transit's netting, the bank bookings'
    # kinds and each entry booked whole)


def test_every_model_has_a_grain_of_its_columns_and_its_unique_test_is_that_grain():
    """One home for what a row is: ``meta.grain`` names columns the model has, and the
    model's uniqueness check is derived from it (none written beside it)."""
    project = shipped()
    with empty_warehouse(project.models) as con:
        for name, model in project.models.items():
            assert model.grain, f"{name} has no meta.grain"
            columns = {c for (c,) in con.execute(
                f"select column_name from (describe {model.qualified})").fetchall()}
            assert set(model.grain) <= columns, (name, model.grain)
            if model.materialized == "partitioned":  # its checks run per partition
                assert {"location_id", "business_date"} <= set(model.grain), name
            unique = [c for c in project.checks if c.model == name
                      and c.name.startswith("unique_") and c.blocking]
            assert [c.name for c in unique] == [f"unique_{'_'.join(model.grain)}"], name
            assert "unique_combination_of_columns" not in str(project.dictionary
                                                                .models[name].tests)


def test_a_grain_that_is_no_list_of_columns_is_refused(tmp_path):
    with pytest.raises(DictionaryError, match="fct_sales: meta.grain must be the list"):
        contract(tmp_path, SCHEMA.replace("grain: [shop, sale_id]", "grain: 'one per sale'"))


def test_nothing_of_the_project_is_read_at_import_and_each_file_once_after():
    """Importing the warehouse and the code location reads no model file; the shipped
    project, asked for twice, reads each of its yml files once (every model's, and the
    shared columns')."""
    probe = textwrap.dedent("""
        import sys
        opened = []
        sys.addaudithook(lambda event, args: opened.append(str(args[0]))
                         if event == "open" and str(args[0]).endswith(".yml") else None)
        import pipeline.warehouse, pipeline.orchestration.code_location
        assert not opened, opened
        from pipeline.warehouse.project import shipped
        shipped(); shipped()
        from pipeline.core.project import MODELS_DIR
        ymls = sorted(str(p) for p in MODELS_DIR.rglob("*.yml"))
        assert sorted(opened) == sorted(set(opened)) == ymls, (opened, ymls)
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_models_folder_of_ones_own_brings_its_own_data_tests(tmp_path):
    """The checks of a project are its folder's (a build runs its project's checks:
    ``tests/integration/test_dagster.py``, a blocking check added to the project)."""
    models_dir = tmp_path / "models"
    shutil.copytree(MODELS_DIR, models_dir)
    schema = models_dir / "reports" / "rpt_coverage.yml"
    schema.write_text(schema.read_text().replace(
        "  - name: rpt_coverage\n", "  - name: rpt_coverage\n    data_tests:\n"
        "      - expression_is_true:\n          name: mine\n"
        "          expression: coverage_status <> 'missing'\n"
        "          config: {severity: warn}\n", 1))
    project = read_project(models_dir)
    assert ("rpt_coverage", "mine") in {(c.model, c.name) for c in project.checks}
    assert "mine" not in {c.name for c in shipped().checks}


def test_materialization_grain_and_owner_come_from_the_models_yml(tmp_path):
    models_dir = tmp_path / "models"
    shutil.copytree(MODELS_DIR, models_dir)
    models = discover_models(models_dir)
    assert models["fct_receipts"].materialized == "partitioned"
    assert models["fct_receipts"].owner == "team:analytics"
    assert models["fct_receipts"].grain == ("location_id", "business_date", "transaction_id")
    assert models["fct_receipts"].rows.startswith("one row per location_id")
    schema = models_dir / "marts" / "fct_receipts.yml"
    schema.write_text(schema.read_text().replace("materialized: partitioned",
                                                 "materialized: incremental", 1))
    with pytest.raises(ModelError, match="model fct_receipts: materialized must be one of"):
        discover_models(models_dir)


def test_each_models_yaml_is_beside_its_sql_and_says_it_once(tmp_path):
    """dbt's convention (jaffle-shop's ``orders.yml`` beside ``orders.sql``): a model's
    properties are in its own folder, in its own file or its family's (models sharing a
    YAML anchor); a model described twice is refused by name."""
    project = shipped()
    for name, doc in project.dictionary.models.items():
        sql = project.models[name].path
        assert doc.path.parent == sql.parent, name
        assert doc.path.stem == name or name in doc.path.read_text(), name
    assert len(list(MODELS_DIR.rglob("schema.yml"))) == 0
    models_dir = tmp_path / "models"
    shutil.copytree(MODELS_DIR, models_dir)
    twice = models_dir / "marts" / "fct_receipts.yml"
    (models_dir / "reports" / "again.yml").write_text(twice.read_text())
    with pytest.raises(DictionaryError, match="model fct_receipts is described twice"):
        read_project(models_dir)


def test_no_models_sql_calls_its_euros_cents():
    """The SQL's own header is read as the model's documentation too: money in the models
    is EUR (the voucher staging's integer ``*_cents`` columns aside)."""
    wrong = [f"{path.relative_to(MODELS_DIR)}:{n}" for stage in STAGES
             for path in sorted((MODELS_DIR / stage).glob("*.sql"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if line.startswith("--") and "in cents" in line]
    assert not wrong, wrong


ORDER_DEPENDENT = ("any_value", "arbitrary", "mode", "first", "last")
"""Aggregates whose answer depends on the order DuckDB's threads meet the rows."""
ORDERED_LISTS = ("string_agg", "list", "array_agg", "group_concat")


def test_no_model_answers_by_the_order_rows_arrive_in():
    """Every build of the same lake books the same figures, accounts and texts: no
    aggregate picks a row by the order DuckDB's threads read them (``mode()`` picked one of
    two equally frequent transit accounts, so a chargeback's account changed between
    builds), and every aggregated list says its order."""
    from sqlglot import exp

    found = []
    for name, model in shipped().models.items():
        tree = sqlglot.parse_one(model.canonical, dialect="duckdb")
        for call in tree.find_all(exp.Func):
            called = (call.sql_name() if not isinstance(call, exp.Anonymous)
                      else call.name).lower()
            if called in ORDER_DEPENDENT and not call.find(exp.Order):
                found.append(f"{name}: {call.sql(dialect='duckdb')[:60]}")
            elif called in ORDERED_LISTS and not call.find(exp.Order):
                found.append(f"{name}: {call.sql(dialect='duckdb')[:60]} (no order by)")
    assert not found, found


def test_every_column_of_staging_is_in_a_mart_the_file_stores():
    """Staging is computed by each build and not stored (#44, item 1): an analyst keeps
    every column of it in the marts and reports that read it (by its name there, or where
    its ``meta.mart`` says), and the shipped file holds no staging model."""
    project = shipped()
    models = project.models
    con = empty_warehouse(models)
    columns = {name: {r[0] for r in con.execute(
        f"select column_name from (describe {m.qualified})").fetchall()}
        for name, m in models.items()}
    readers: dict[str, set[str]] = {}
    for name, model in models.items():
        for dep in model.model_deps:
            readers.setdefault(dep, set()).add(name)

    def downstream(name: str) -> set[str]:
        found, todo = set(), [name]
        while todo:
            for reader in readers.get(todo.pop(), ()):
                if reader not in found:
                    found.add(reader)
                    todo.append(reader)
        return {m for m in found if models[m].stored}

    lost = []
    for name, model in models.items():
        if model.stored:
            continue
        held = set().union(*(columns[m] for m in downstream(name)))
        marts = project.dictionary.models[name].column_marts
        for column in sorted(columns[name]):
            if column in marts:
                mart, _, there = marts[column].partition(".")
                assert mart in downstream(name) and there in columns[mart], \
                    f"{name}.{column}: meta.mart {marts[column]} is not a column of a " \
                    "stored model that reads it"
            elif column not in held:
                lost.append(f"{name}.{column}")
    assert lost == []
    assert {m.stage for m in models.values() if not m.stored} == {"staging"}
    assert len([m for m in models.values() if not m.stored]) == 30
