"""The data dictionary: every model and column described beside its SQL, applied with
COMMENT ON, rendered by `pos-etl docs`; no description of something that does not exist."""

from datetime import date

import duckdb
import pytest

from pipeline.cli import main
from pipeline.sqlrunner.dictionary import load_dictionary
from pipeline.warehouse import MODELS_DIR, STAGES, discover_models
from pipeline.warehouse.project import empty_warehouse
from tests.conftest import loaded_warehouse

pytestmark = pytest.mark.usefixtures("dagster_in_memory")



@pytest.fixture(scope="module")
def built(sandbox_url, tmp_path_factory):
    day = date(2026, 11, 20)
    return loaded_warehouse(sandbox_url, tmp_path_factory.mktemp("docs") / "data", day, day)


def test_every_model_and_column_carries_its_description(built):
    models = {name: m for name, m in discover_models().items() if m.stored}
    with duckdb.connect(str(built.warehouse.warehouse_path), read_only=True) as con:
        # staging is computed by each build, not stored: the analyst's catalog is main
        assert con.execute("select distinct schema_name from duckdb_tables()").fetchall() \
            == [("main",)]
        described = dict(con.execute(
            "select table_name, comment from duckdb_tables() where schema_name in "
            "('main', 'staging') union all select view_name, comment from duckdb_views() "
            "where schema_name in ('main', 'staging') and not internal").fetchall())
        columns = con.execute(
            "select schema_name, table_name, column_name, comment from duckdb_columns() "
            "where database_name = current_database() and schema_name in ('main', 'staging')"
        ).fetchall()
    assert {name: bool(described.get(name)) for name in models} == dict.fromkeys(models, True)
    ours = [c for c in columns if c[1] in models]
    assert len(ours) > 600
    assert [c[:3] for c in ours if not c[3]] == []
    # what BI tools show: the model's own words where it has them
    comment = {(t, c): text for _, t, c, text in ours}
    assert "Umsatzwirksam" in comment[("fct_turnover_daily", "turnover_net")]
    assert "Gross price of ONE unit" in comment[("fct_receipt_items", "unit_gross_price")]
    assert ("fct_receipt_items", "gross_amount") not in comment  # one name, one meaning
    assert "in EUR" in comment[("rpt_daily_close", "gross_amount")]


# Money in the marts and reports: exact or to the cent, nothing else (docs/warehouse.md).
MONEY_TYPES = ("DECIMAL(38,8)", "DECIMAL(18,2)")
# decimals that are not money: units, percentages, nutrition facts
NOT_MONEY = {"quantity", "min_amount", "max_amount", "free_amount", "nutrition_amount",
             "nutrition_calories", "tax_rate_percent", "vat_percent", "geo_latitude",
             "geo_longitude", "max_values_allowed", "min_values_required", "values_for_free",
             "fee_percent"}
# one source record per row (a receipt, a line, a payment, a price): exact as sent or as
# computed from it; a cent figure is rounded from a sum, never summed from rounded rows
ROW_LEVEL = {"fct_receipts", "fct_receipt_items", "fct_item_side_dishes", "fct_payments",
             "fct_cash_movements", "dim_menu_entry_feature_values_history",
             "dim_products", "dim_products_history", "dim_menu_entries", "rpt_reversals",
             "rpt_unmatched_items"}


def _columns(built) -> list[tuple[str, str, str, str, str]]:
    with duckdb.connect(str(built.warehouse.warehouse_path), read_only=True) as con:
        return con.execute(
            "select schema_name, table_name, column_name, data_type, coalesce(comment, '') "
            "from duckdb_columns() where database_name = current_database() "
            "and schema_name in ('main', 'staging')").fetchall()


def test_a_money_column_says_its_unit_truthfully(built):
    """What Superset or Metabase shows beside a column: a comment that says cents belongs to
    an integer column named *_cents; every euro amount says EUR; a decimal that is not
    money does not."""
    columns = _columns(built)
    assert [(t, c) for _, t, c, kind, text in columns if "cents" in text.replace("_cents", "")
            and "to the cent" not in text and "whole cents" not in text
            and not (c.endswith("_cents") and kind in ("BIGINT", "INTEGER"))] == []
    assert [(t, c, kind) for _, t, c, kind, _ in columns if c.endswith("_cents")
            and kind not in ("BIGINT", "INTEGER")] == []
    decimals = [(s, t, c, kind, text) for s, t, c, kind, text in columns
                if kind.startswith("DECIMAL")]
    assert [(t, c) for _, t, c, _, text in decimals
            if c not in NOT_MONEY and "EUR" not in text] == []
    assert [(t, c) for _, t, c, _, text in decimals if c in NOT_MONEY and "EUR" in text] == []


def test_the_marts_hold_money_in_two_types_and_counts_as_bigint(built):
    """Exact (DECIMAL(38,8)) or to the cent (DECIMAL(18,2)); beside every exact sum its
    cent-rounded companion; counts BIGINT, never HUGEINT (Polars reads it as a decimal)."""
    marts = [(t, c, kind) for s, t, c, kind, _ in _columns(built) if s == "main"]
    money = [(t, c, kind) for t, c, kind in marts
             if kind.startswith("DECIMAL") and c not in NOT_MONEY]
    assert len(money) > 60
    assert [(t, c, kind) for t, c, kind in money if kind not in MONEY_TYPES] == []
    assert [(t, c) for t, c, kind in marts if kind == "HUGEINT"
            or (c.endswith("_count") and kind != "BIGINT")] == []
    have = {(t, c): kind for t, c, kind in marts}
    exact = [(t, c) for t, c, kind in money if kind == "DECIMAL(38,8)" and t not in ROW_LEVEL]
    assert len(exact) >= 12
    assert [(t, c) for t, c in exact if have.get((t, f"{c}_rounded")) != "DECIMAL(18,2)"] == []


def test_the_dictionary_describes_nothing_that_does_not_exist(built):
    dictionary = load_dictionary(MODELS_DIR, STAGES)
    models = discover_models()
    columns = {}
    with duckdb.connect(str(built.warehouse.warehouse_path), read_only=True) as con:
        for table, column in con.execute(
                "select table_name, column_name from duckdb_columns() "
                "where database_name = current_database()").fetchall():
            columns.setdefault(table, set()).add(column)
    with empty_warehouse(models) as con:  # the models a build computes and does not store
        for name in (n for n, m in models.items() if not m.stored):
            columns[name] = {r[0] for r in con.execute(
                f"select column_name from (describe {models[name].qualified})").fetchall()}
    assert set(dictionary.models) == set(models)
    stale = {f"{m}.{c}" for m, doc in dictionary.models.items() for c in doc.columns
             if c not in columns[m]}
    assert stale == set()
    used = set().union(*(columns[m] for m in models))
    assert set(dictionary.shared) - used == set()


def test_docs_command_renders_every_model(built, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("POS_ETL_DATA_DIR", str(built.warehouse.data_dir))
    assert main(["docs"]) == 0
    page = (built.warehouse.data_dir / "docs" / "index.html").read_text()
    assert "wrote the data dictionary of 92 models" in capsys.readouterr().out
    # the first page says where to start and which figure is which
    assert page.index('id="start-here"') < page.index('id="main.fct_turnover_daily"')
    assert "<h2>Which figure?</h2>" in page and "<table>" in page
    for model in discover_models().values():
        assert f'id="{model.schema}.{model.name}"' in page
    assert main(["docs", "-o", str(tmp_path / "dictionary.md")]) == 0
    text = (tmp_path / "dictionary.md").read_text()
    assert "## `staging.stg_pos__receipts` (computed by each build, not stored)" in text
    assert text.index("## Start here") < text.index("## Which figure?") < text.index("## Models")
    # the lake's columns renamed by staging, per lake table
    assert "| `receipts` | `staging.stg_pos__receipts` | `tip` | `tip_amount` |" in text
    assert "| `receipt_items` | `staging.stg_pos__receipt_items` | `name` | `product_name` |" \
        in text
    assert "| `turnover_net` | DECIMAL(38,8) |" in text
    monkeypatch.setenv("POS_ETL_DATA_DIR", str(tmp_path / "nothing"))
    assert main(["docs"]) == 1
    assert "run `pos-etl load`" in capsys.readouterr().err
