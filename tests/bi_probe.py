"""What a BI client sees of a warehouse file: run by the Python of a client's own virtual
environment (``tests/integration/test_bi_clients.py``), with only that client installed.

    python bi_probe.py duckdb|sqlalchemy <file>
    python bi_probe.py queries <file> <queries.json>

prints JSON: every relation of ``main`` (the analyst's catalog) with its comment and row count,
the turnover of ``fct_turnover_daily`` as text and whether it arrived as a Decimal; or,
for each query of the list, its row count or its error.
"""

import json
import sys
from decimal import Decimal

RELATIONS = """
    select schema_name || '.' || table_name, comment from duckdb_tables()
    where schema_name = 'main'
    union all
    select schema_name || '.' || view_name, comment from duckdb_views()
    where schema_name = 'main' and not internal"""
TURNOVER = "select sum(turnover_net) from fct_turnover_daily"


def with_duckdb(path: str) -> dict:
    import duckdb

    con = duckdb.connect(path, read_only=True)
    relations = dict(con.execute(RELATIONS).fetchall())
    rows = {name: con.execute(f"select count(*) from {name}").fetchone()[0]
            for name in relations}
    turnover = con.execute(TURNOVER).fetchone()[0]
    schemas = sorted({s for (s,) in con.execute(
        "select schema_name from duckdb_tables() union select schema_name "
        "from duckdb_views() where not internal").fetchall()})
    return {"client": f"duckdb {duckdb.__version__}", "comments": relations, "rows": rows,
            "turnover": str(turnover), "decimal": isinstance(turnover, Decimal),
            "schemas": schemas}


def with_sqlalchemy(path: str) -> dict:
    import sqlalchemy as sa

    engine = sa.create_engine(f"duckdb:///{path}", connect_args={"read_only": True})
    inspector = sa.inspect(engine)
    schemas = sorted(inspector.get_schema_names())
    comments, rows = {}, {}
    with engine.connect() as con:
        for schema in ("main",):
            names = inspector.get_table_names(schema=schema) + \
                inspector.get_view_names(schema=schema)
            for name in names:
                comments[f"{schema}.{name}"] = inspector.get_table_comment(
                    name, schema=schema)["text"]
                rows[f"{schema}.{name}"] = con.execute(
                    sa.text(f"select count(*) from {schema}.{name}")).scalar()
        turnover = con.execute(sa.text(TURNOVER)).scalar()
    return {"client": f"sqlalchemy {sa.__version__}", "comments": comments, "rows": rows,
            "turnover": str(turnover), "decimal": isinstance(turnover, Decimal),
            "schemas": schemas}


def with_queries(path: str, queries: str) -> dict:
    import duckdb

    con = duckdb.connect(path, read_only=True)
    answers = []
    with open(queries, encoding="utf-8") as listed:
        queries_to_run = json.load(listed)
    for sql in queries_to_run:
        try:
            answers.append(len(con.execute(sql).fetchall()))
        except duckdb.Error as error:
            answers.append(f"{type(error).__name__}: {error}")
    return {"client": f"duckdb {duckdb.__version__}", "answers": answers}


if __name__ == "__main__":
    how, path = sys.argv[1:3]
    if how == "queries":
        print(json.dumps(with_queries(path, sys.argv[3])))
    else:
        print(json.dumps({"duckdb": with_duckdb, "sqlalchemy": with_sqlalchemy}[how](path)))
