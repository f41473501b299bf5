"""``pos-etl docs``: the warehouse's documented catalog (schemas, models, columns, types,
descriptions, as ``COMMENT ON`` put them: ``pipeline.sqlrunner.dictionary``) as Markdown
or one static HTML page, after the start page."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str


@dataclass
class Entry:
    schema: str
    name: str
    kind: str
    description: str
    columns: list[Column]


def catalog(con: duckdb.DuckDBPyConnection, schemas: tuple[str, ...]) -> list[Entry]:
    """The documented catalog of an open warehouse: its models, in schema order."""
    relations = con.execute(
        "select schema_name, table_name, 'table', coalesce(comment, '') from duckdb_tables() "
        "where database_name = current_database() and not internal "
        "union all select schema_name, view_name, 'view', coalesce(comment, '') "
        "from duckdb_views() where database_name = current_database() and not internal"
    ).fetchall()
    columns: dict[tuple[str, str], list[Column]] = {}
    for schema, table, column, dtype, comment in con.execute(
            "select schema_name, table_name, column_name, data_type, coalesce(comment, '') "
            "from duckdb_columns() where database_name = current_database() "
            "order by schema_name, table_name, column_index").fetchall():
        columns.setdefault((schema, table), []).append(Column(column, dtype, comment))
    found = [Entry(s, t, k, c, columns.get((s, t), [])) for s, t, k, c in relations
             if s in schemas]
    return sorted(found, key=lambda e: (schemas.index(e.schema), e.name))


COMPUTED = "computed by each build, not stored"
"""What the dictionary calls a staging model's kind: the warehouse holds its rows in the
marts and reports that read it."""


def computed_entries(project) -> list[Entry]:
    """The models a build computes and the warehouse does not store (staging), from the
    project: their columns' real types (the models over an empty lake) and descriptions."""
    from pipeline.warehouse.project import empty_warehouse

    models, dictionary = project.models, project.dictionary
    found = []
    with empty_warehouse(models) as con:
        for name in sorted(n for n, m in models.items() if not m.stored):
            typed = con.execute(f"select column_name, column_type "
                                f"from (describe {models[name].qualified})").fetchall()
            found.append(Entry(models[name].schema, name, COMPUTED,
                               dictionary.model(name) or "",
                               [Column(c, t, dictionary.column(name, c) or "")
                                for c, t in typed]))
    return found


LAKE_INTRO = ("Each lake table (Parquet as Delta, data/lake/<table>) is read by one staging "
              "model, which each build computes (the warehouse does not store it). Its "
              "columns keep their names there and in the marts and reports, except these:")


def render_markdown(entries: list[Entry], title: str, start: str = "",
                    lake: list = ()) -> str:
    """The catalog as Markdown, after the start page (its headings one level down), and
    the lake's columns renamed by staging (``lake``: ``sqlrunner.models.SourceColumns``)."""
    lines = [f"# {title}", ""]
    if start:
        lines += ["#" + line if line.startswith("#") else line
                  for line in start.strip().splitlines()] + ["", "## Models", ""]
    lines += [f"- [`{e.schema}.{e.name}`](#{e.schema}{e.name})" for e in entries]
    for e in entries:
        lines += ["", f'<a id="{e.schema}{e.name}"></a>', f"## `{e.schema}.{e.name}` ({e.kind})",
                  "", e.description or "*(no description)*", "",
                  "| column | type | description |", "| --- | --- | --- |"]
        lines += [f"| `{c.name}` | {c.type} | {c.description.replace('|', '/') or '*(none)*'} |"
                  for c in e.columns]
    if lake:
        lines += ["", "## From the lake", "", LAKE_INTRO, "",
                  "| lake table | staging model | lake column | staging column |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| `{t.table}` | `staging.{t.model}` | `{lake_name}` | `{ours}` |"
                  for t in lake for lake_name, ours in t.renamed.items()]
    return "\n".join(lines) + "\n"


def render_html(entries: list[Entry], title: str, start: str = "", lake: list = ()) -> str:
    """The catalog as one HTML page, the start page (rendered by markdown-it) first, the
    lake's renamed columns last."""
    from markdown_it import MarkdownIt

    from pipeline.outputs.pages import render_page

    html = MarkdownIt("commonmark", {"html": False}).enable("table").render(start) if start else ""
    return render_page("dictionary.html.j2", entries=entries, title=title, start=html,
                       lake=lake, lake_intro=LAKE_INTRO)
