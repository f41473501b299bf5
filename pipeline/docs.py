"""The data dictionary: every model's contract and description, kept beside the SQL.

``dbt_like_sql/<stage>/schema.yml`` holds each model of its folder as dbt's properties
file does: its description and its columns'; its ``config`` (``materialized``, and in
``meta`` its ``owner`` and ``grain``); its ``data_tests`` (``pipeline.checks``).
``dbt_like_sql/columns.yml`` holds what a column means in every model that has it (dbt's
doc blocks). A build applies both to the warehouse with
``COMMENT ON``, so BI tools show them, and ``pos-etl docs`` renders the warehouse's
catalog (schemas, models, columns, types, descriptions) as Markdown or a static HTML page.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import yaml

MODELS_DIR = Path(str(importlib.resources.files("dbt_like_sql")))
"""The models shipped with the package (``dbt_like_sql``)."""
STAGES = ("staging", "marts", "reports")
SHARED_COLUMNS = "columns.yml"
SCHEMA_FILE = "schema.yml"
START_PAGE = "start_here.md"
"""The dictionary's first page (dbt's ``__overview__``): which table and which figure to
use, the money types, example queries (a test runs them on DuckDB 1.1)."""


def start_page(models_dir: Path = MODELS_DIR) -> str:
    """The start page's Markdown."""
    return (models_dir / START_PAGE).read_text(encoding="utf-8")


class DictionaryError(Exception):
    """A schema file is malformed or names a model that does not exist."""


@dataclass
class ModelDoc:
    description: str
    columns: dict[str, str] = field(default_factory=dict)
    materialized: str = "table"
    owner: str | None = None
    """Who answers for the model (Dagster's owner: an email or ``team:<name>``)."""
    grain: str = ""
    tests: list = field(default_factory=list)
    """The ``data_tests`` entries as written (``pipeline.checks`` reads them)."""
    column_tests: dict[str, list] = field(default_factory=dict)
    """Per column, its ``data_tests`` entries."""


@dataclass
class Dictionary:
    models: dict[str, ModelDoc]
    shared: dict[str, str]
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per locale (``de``), a column's header in exports, by column name."""

    def model(self, name: str) -> str | None:
        doc = self.models.get(name)
        return doc.description if doc else None

    def column(self, model: str, column: str) -> str | None:
        """The model's own description of the column, else the shared one."""
        doc = self.models.get(model)
        return (doc.columns.get(column) if doc else None) or self.shared.get(column)


def _yaml(path: Path) -> dict:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise DictionaryError(f"{path}: not valid YAML: {exc}") from None


def load_dictionary(models_dir: Path, stages: tuple[str, ...]) -> Dictionary:
    shared_file = models_dir / SHARED_COLUMNS
    shared_doc = _yaml(shared_file) if shared_file.exists() else {}
    shared = shared_doc.get("columns", {})
    labels = {locale: {k: str(v) for k, v in names.items()}
              for locale, names in (shared_doc.get("labels") or {}).items()}
    models: dict[str, ModelDoc] = {}
    for stage in stages:
        path = models_dir / stage / SCHEMA_FILE
        if not path.exists():
            continue
        for entry in _yaml(path).get("models", []):
            try:
                columns = {c["name"]: " ".join(str(c["description"]).split())
                           for c in entry.get("columns") or [] if "description" in c}
                config = entry.get("config") or {}
                meta = config.get("meta") or {}
                models[entry["name"]] = ModelDoc(
                    " ".join(str(entry["description"]).split()), columns,
                    str(config.get("materialized", "table")), meta.get("owner"),
                    " ".join(str(meta.get("grain", "")).split()),
                    list(entry.get("data_tests") or []),
                    {c["name"]: list(c["data_tests"]) for c in entry.get("columns") or []
                     if c.get("data_tests")})
            except (KeyError, TypeError, AttributeError):
                raise DictionaryError(f"{path}: every model needs a name and a description, "
                                      f"every column a name and a description, config a "
                                      f"mapping (at {entry!r:.80})") from None
    return Dictionary(models, {k: " ".join(str(v).split()) for k, v in shared.items()},
                      labels)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def apply_comments(con: duckdb.DuckDBPyConnection, models: dict, dictionary: Dictionary
                   ) -> list[str]:
    """``COMMENT ON`` every model and column the dictionary describes; returns what it
    does not describe (``model`` or ``model.column``)."""
    missing = []
    statements = []
    found: dict[tuple[str, str], list[str]] = {}
    for schema, table, column in con.execute(
            "select schema_name, table_name, column_name from duckdb_columns() "
            "where database_name = current_database() order by column_index").fetchall():
        found.setdefault((schema, table), []).append(column)
    for name, model in models.items():
        kind = "view" if model.materialized == "view" else "table"
        description = dictionary.model(name)
        if description:
            statements.append(f"comment on {kind} {model.qualified} is {_literal(description)}")
        else:
            missing.append(name)
        for column in found.get((model.schema, name), []):
            text = dictionary.column(name, column)
            if text:
                statements.append(f'comment on column {model.qualified}."{column}" is '
                                  f"{_literal(text)}")
            else:
                missing.append(f"{name}.{column}")
    if statements:  # one round trip: a build comments on some 700 columns
        con.execute(";\n".join(statements))
    return missing


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


LAKE_INTRO = ("Each lake table (Parquet as Delta, data/lake/<table>) is read by one staging "
              "model. Its columns keep their names there, except these:")


def render_markdown(entries: list[Entry], title: str, start: str = "",
                    lake: list = ()) -> str:
    """The catalog as Markdown, after the start page (its headings one level down), and
    the lake's columns renamed by staging (``lake``: ``models.LakeColumns``)."""
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

    from pipeline.pages import render_page

    html = MarkdownIt("commonmark", {"html": False}).enable("table").render(start) if start else ""
    return render_page("dictionary.html.j2", entries=entries, title=title, start=html,
                       lake=lake, lake_intro=LAKE_INTRO)
