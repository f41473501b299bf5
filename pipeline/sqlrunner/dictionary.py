"""The data dictionary: every model's contract and description, kept beside the SQL.

A model's YAML file beside its SQL (``marts/fct_orders.yml`` for ``fct_orders.sql``;
models that share a YAML anchor share a file, named after the first) holds it as dbt's
properties files do: its description and its columns'; its ``config`` (``materialized``,
and in ``meta`` its ``owner`` and ``grain``); its ``data_tests`` (``checks``); its
``unit_tests`` (``unit``). ``columns.yml`` at the project's root holds what a column means
in every model that has it (dbt's doc blocks). ``apply_comments`` writes both into a
DuckDB file with ``COMMENT ON``, so BI tools show them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import yaml

SHARED_COLUMNS = "columns.yml"
"""What a column means in every model that has it (dbt's doc blocks), at the project's
root; each model's own YAML file is beside its SQL (``marts/fct_orders.yml``)."""


class DictionaryError(Exception):
    """A schema file is malformed or names a model that does not exist."""


@dataclass
class ModelDoc:
    description: str
    columns: dict[str, str] = field(default_factory=dict)
    materialized: str = "table"
    owner: str | None = None
    """Who answers for the model (Dagster's owner: an email or ``team:<name>``)."""
    grain: tuple[str, ...] = ()
    """``meta.grain``: the columns one row is unique by (its unique test derives from it)."""
    rows: str = ""
    """``meta.rows``: which rows the model has, in words."""
    tests: list = field(default_factory=list)
    """The ``data_tests`` entries as written (``checks`` reads them)."""
    column_tests: dict[str, list] = field(default_factory=dict)
    """Per column, its ``data_tests`` entries."""
    column_marts: dict[str, str] = field(default_factory=dict)
    """Per column of a staging model (not stored), ``meta.mart``: the ``model.column`` of a
    mart or report that holds it under another name (by default: one of its own name)."""
    path: Path | None = None
    """The YAML file that describes it."""


@dataclass
class Dictionary:
    models: dict[str, ModelDoc]
    shared: dict[str, str]
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per locale (``de``), a column's header in exports, by column name."""
    unit_tests: list[tuple[Path, dict]] = field(default_factory=list)
    """The ``unit_tests`` entries as written, with their file (``unit``
    reads them)."""

    def model(self, name: str) -> str | None:
        doc = self.models.get(name)
        return doc.description if doc else None

    def column(self, model: str, column: str) -> str | None:
        """The model's own description of the column, else the shared one."""
        doc = self.models.get(model)
        return (doc.columns.get(column) if doc else None) or self.shared.get(column)


SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's safe loader in C (libyaml, in PyYAML's wheels): the same documents and types
as ``yaml.safe_load``, ten times quicker; a PyYAML built without libyaml uses Python's."""


def _yaml(path: Path) -> dict:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER) or {}
    except yaml.YAMLError as exc:
        raise DictionaryError(f"{path}: not valid YAML: {exc}") from None


def load_dictionary(models_dir: Path, stages: tuple[str, ...]) -> Dictionary:
    shared_file = models_dir / SHARED_COLUMNS
    shared_doc = _yaml(shared_file) if shared_file.exists() else {}
    shared = shared_doc.get("columns", {})
    labels = {locale: {k: str(v) for k, v in names.items()}
              for locale, names in (shared_doc.get("labels") or {}).items()}
    models: dict[str, ModelDoc] = {}
    unit_tests: list[tuple[Path, dict]] = []
    for path in (p for stage in stages for p in sorted((models_dir / stage).glob("*.yml"))):
        document = _yaml(path)
        unit_tests += [(path, entry) for entry in document.get("unit_tests") or []]
        for entry in document.get("models") or []:
            if isinstance(entry, dict) and entry.get("name") in models:
                raise DictionaryError(f"{path}: model {entry['name']} is described twice "
                                      f"(also in {models[entry['name']].path.name})")
            try:
                columns = {c["name"]: " ".join(str(c["description"]).split())
                           for c in entry.get("columns") or [] if "description" in c}
                config = entry.get("config") or {}
                meta = config.get("meta") or {}
                grain = meta.get("grain") or []
                if not isinstance(grain, list) or not all(isinstance(c, str) for c in grain):
                    raise DictionaryError(f"{path}: model {entry['name']}: meta.grain must be "
                                          f"the list of columns one row is unique by, not "
                                          f"{grain!r}")
                models[entry["name"]] = ModelDoc(
                    " ".join(str(entry["description"]).split()), columns,
                    str(config.get("materialized", "table")), meta.get("owner"),
                    tuple(grain), " ".join(str(meta.get("rows", "")).split()),
                    list(entry.get("data_tests") or []),
                    {c["name"]: list(c["data_tests"]) for c in entry.get("columns") or []
                     if c.get("data_tests")},
                    {c["name"]: str(c["meta"]["mart"]) for c in entry.get("columns") or []
                     if (c.get("meta") or {}).get("mart")}, path)
            except (KeyError, TypeError, AttributeError):
                raise DictionaryError(f"{path}: every model needs a name and a description, "
                                      f"every column a name and a description, config a "
                                      f"mapping (at {entry!r:.80})") from None
    return Dictionary(models, {k: " ".join(str(v).split()) for k, v in shared.items()},
                      labels, unit_tests)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def apply_comments(con: duckdb.DuckDBPyConnection, models: dict, dictionary: Dictionary
                   ) -> list[str]:
    """``COMMENT ON`` every stored model and column the dictionary describes, where the
    file does not hold that comment already (a table kept from the last build keeps its
    comments); returns what it does not describe (``model`` or ``model.column``). A model
    the file does not store (staging, ``Model.stored``) has no comment to carry."""
    missing = []
    statements = []
    found: dict[tuple[str, str], list[tuple[str, str | None]]] = {}
    for schema, table, column, comment in con.execute(
            "select schema_name, table_name, column_name, comment from duckdb_columns() "
            "where database_name = current_database() order by column_index").fetchall():
        found.setdefault((schema, table), []).append((column, comment))
    held = dict(((schema, name), comment) for schema, name, comment in con.execute(
        "select schema_name, table_name, comment from duckdb_tables() "
        "where database_name = current_database() union all "
        "select schema_name, view_name, comment from duckdb_views() "
        "where database_name = current_database() and not internal").fetchall())
    for name, model in models.items():
        if not model.stored:
            continue
        kind = "view" if model.materialized == "view" else "table"
        description = dictionary.model(name)
        if not description:
            missing.append(name)
        elif held.get((model.schema, name)) != description:
            statements.append(f"comment on {kind} {model.qualified} is {_literal(description)}")
        for column, comment in found.get((model.schema, name), []):
            text = dictionary.column(name, column)
            if not text:
                missing.append(f"{name}.{column}")
            elif comment != text:
                statements.append(f'comment on column {model.qualified}."{column}" is '
                                  f"{_literal(text)}")
    if statements:  # one round trip and one commit: a new file takes some 700 comments
        con.begin()  # (each its own transaction took three times as long)
        try:
            con.execute(";\n".join(statements))
        except BaseException:
            con.rollback()
            raise
        con.commit()
    return missing
