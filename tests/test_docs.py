"""The data dictionary: every model and column described beside its SQL, applied with
COMMENT ON, rendered by `pos-etl docs`; no description of something that does not exist."""

from datetime import date

import duckdb
import pytest

from pipeline.cli import main
from pipeline.docs import load_dictionary
from pipeline.warehouse import MODELS_DIR, STAGES, discover_models
from tests.conftest import loaded_warehouse


@pytest.fixture(scope="module")
def built(sandbox_url, tmp_path_factory):
    day = date(2026, 11, 20)
    return loaded_warehouse(sandbox_url, tmp_path_factory.mktemp("docs") / "data", day, day)


def test_every_model_and_column_carries_its_description(built):
    models = discover_models()
    with duckdb.connect(str(built.warehouse.warehouse_path), read_only=True) as con:
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
    assert "Gross unit price" in comment[("fct_receipt_items", "gross_amount")]
    assert "in euros" in comment[("rpt_daily_close", "gross_amount")]


def test_a_money_column_says_its_unit_truthfully(built):
    """What Superset or Metabase shows beside a column: euro amounts (DECIMAL) never
    described as cents; a column named *_cents is whole cents (an integer type)."""
    with duckdb.connect(str(built.warehouse.warehouse_path), read_only=True) as con:
        columns = con.execute(
            "select table_name, column_name, data_type, comment from duckdb_columns() "
            "where database_name = current_database() and schema_name in ('main', 'staging')"
        ).fetchall()
        tables = con.execute("select table_name, comment from duckdb_tables() where "
                             "schema_name in ('main', 'staging')").fetchall()
    decimal_cents = [(t, c) for t, c, kind, text in columns
                     if kind.startswith("DECIMAL") and "in cents" in (text or "")]
    assert decimal_cents == []
    assert [(t, c, kind) for t, c, kind, _ in columns if c.endswith("_cents")
            and kind not in ("BIGINT", "INTEGER", "HUGEINT")] == []
    # a table whose money is all euros does not say cents either
    euro_tables = {t for t, c, kind, _ in columns if kind.startswith("DECIMAL(18,2)")}
    cent_tables = {t for t, c, kind, _ in columns if c.endswith("_cents")}
    assert [t for t, text in tables if t in euro_tables - cent_tables
            and "in cents" in (text or "")] == []


def test_the_dictionary_describes_nothing_that_does_not_exist(built):
    dictionary = load_dictionary(MODELS_DIR, STAGES)
    models = discover_models()
    with duckdb.connect(str(built.warehouse.warehouse_path), read_only=True) as con:
        columns = {}
        for table, column in con.execute(
                "select table_name, column_name from duckdb_columns() "
                "where database_name = current_database()").fetchall():
            columns.setdefault(table, set()).add(column)
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
    assert "wrote the data dictionary of 53 models" in capsys.readouterr().out
    for model in discover_models().values():
        assert f'id="{model.schema}.{model.name}"' in page
    assert main(["docs", "-o", str(tmp_path / "dictionary.md")]) == 0
    text = (tmp_path / "dictionary.md").read_text()
    assert "## `staging.stg_pos__receipts` (table)" in text
    assert "| `turnover_net` | DECIMAL(38,8) |" in text
    monkeypatch.setenv("POS_ETL_DATA_DIR", str(tmp_path / "nothing"))
    assert main(["docs"]) == 1
    assert "run `pos-etl load`" in capsys.readouterr().err
