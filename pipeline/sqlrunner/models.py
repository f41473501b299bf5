"""A project's SQL models: found, parsed and put in build order.

A model is one ``.sql`` file in a stage's folder (``staging``, ``marts``, ``reports``);
its name is the file name. A model reads the project's sources as ``<schema>.<table>``
(``Sources``: what no model of the project makes) and other models by name; dependencies
are parsed from the SQL with sqlglot, never listed by hand.

A model is materialized as its ``config`` in its YAML file (beside its SQL) says
(``materialized``, as dbt's; default ``table``):

- ``table`` (the default): rebuilt in full by every build (dimensions, small reports);
- ``partitioned``: its grain lies within one area's partitions (the area of the sources
  it reads), so a build computes it only for the partitions whose input changed and
  keeps the rest;
- ``view``: computed when queried.

Staging models are computed by each build and never stored (dbt's convention has them as
views; here the file must answer without its sources, so a view could not outlive the
build): they live in the build's in-memory catalog while the marts and reports that
read them are computed, and the marts are the stored copy (``Model.stored``). A staging
model's ``materialized`` still says how it is computed: ``partitioned`` for the groups a
build computes, ``table`` in full.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from pathlib import Path

import duckdb
import sqlglot
from sqlglot import exp

from pipeline.sqlrunner.dictionary import Dictionary, load_dictionary
from pipeline.sqlrunner.parse_cache import remembered

STAGES = ("staging", "marts", "reports")
"""A project's folders of models, in the order they read each other (dbt's layers)."""
STAGING_SCHEMA = "staging"


@dataclass(frozen=True)
class Sources:
    """What a project's models read that no model of it makes (dbt's sources): tables in
    one schema, each in an area (a family of partitions that a partitioned model follows),
    and the table macros a runner creates from its configuration."""

    schema: str
    """The schema the models name them in (``<schema>.<table>``)."""
    areas: Mapping[str, str] = field(default_factory=dict)
    """Each table -> its area."""
    table_macros: tuple[str, ...] = ()
    """Table macros (``name()``) that only models of ``materialized: table`` may read: a
    configuration's, not part of a partitioned model's version."""
    keys: tuple[str, ...] = ()
    """The columns that name a partition (a check's failing rows are told by them)."""


class ModelError(Exception):
    """A model's SQL is wrong or refers to something that does not exist."""


MATERIALIZATIONS = ("table", "partitioned", "view")


@dataclass(frozen=True)
class Model:
    name: str
    stage: str
    path: Path
    sql: str
    model_deps: frozenset[str]
    source_deps: frozenset[str]
    materialized: str = "table"
    area: str | None = None
    """The sources' area whose partitions a partitioned model follows."""
    canonical: str = ""
    """The SQL as parsed (``canonical_sql``): what a part's version hashes."""
    grain: tuple[str, ...] = ()
    """The columns one row is unique by (``config.meta.grain`` in its YAML)."""
    rows: str = ""
    """Which rows it has, in words (``config.meta.rows``)."""
    owner: str | None = None
    """Who answers for it (``config.meta.owner``): a Dagster owner."""

    @property
    def schema(self) -> str:
        """Where the model lives in the warehouse: staging models in ``staging``, marts
        and reports in ``main`` (the default schema BI tools open)."""
        return STAGING_SCHEMA if self.stage == "staging" else "main"

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def stored(self) -> bool:
        """Whether the warehouse file holds the model: staging models are computed by the
        build that reads them and not stored; marts and reports are."""
        return self.stage != "staging"

    @property
    def built_as(self) -> str:
        """How a build makes it, as its log line says: the materialization, and ``not
        stored`` for a model the file does not hold."""
        return self.materialized if self.stored else f"{self.materialized}, not stored"



def _materialization(dictionary: Dictionary, name: str) -> str:
    """``config.materialized`` of the model's YAML entry (default ``table``)."""
    doc = dictionary.models.get(name)
    how = doc.materialized if doc else "table"
    if how not in MATERIALIZATIONS:
        raise ModelError(f"model {name}: materialized must be one of "
                         f"{', '.join(MATERIALIZATIONS)}, not {how!r}")
    return how


def _partition_areas(models: dict[str, Model], sources: Sources) -> dict[str, Model]:
    """Give each partitioned model its area; it may read only that area's sources and
    partitioned models of the same area (its rows of a partition come from that partition)."""
    done: dict[str, Model] = {}
    for name in build_order(models):
        model = models[name]
        if model.materialized != "partitioned":
            done[name] = model
            continue
        read = [t for t in sources.table_macros if re.search(rf"\b{t}\s*\(", model.sql)]
        if read:
            raise ModelError(f"model {name} is partitioned, so it may not read {read[0]}() "
                             "(not part of its version: a config change would not recompute "
                             "it); make it materialized: table")
        others = [d for d in model.model_deps if done[d].materialized != "partitioned"]
        areas = {sources.areas[t] for t in model.source_deps} | {
            done[d].area for d in model.model_deps}
        if others or len(areas) != 1:
            raise ModelError(f"model {name} is partitioned, so it may read the "
                             f"{sources.schema} tables and partitioned models of one area "
                             f"only; it reads {sorted(model.source_deps | model.model_deps)}")
        done[name] = Model(**{**model.__dict__, "area": areas.pop()})
    return done


def _parse(sql: str, name: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(sql, dialect="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise ModelError(f"model {name}: cannot parse its SQL: {exc}") from None


@functools.lru_cache(maxsize=256)
def canonical_sql(sql: str, cache: Path | None = None) -> str:
    """``sql`` as sqlglot parses it, written back without comments and layout: editing a
    comment or the indentation of a model does not change what its versions hash. Parsed
    once per process, and once for all processes in the folder ``cache`` (``parse_cache``;
    None: not kept)."""
    return remembered(cache, ("canonical", sql), lambda: {"canonical": ";\n".join(
        tree.sql(dialect="duckdb", comments=False)
        for tree in sqlglot.parse(sql, dialect="duckdb") if tree is not None)},
        _is_canonical, __file__)["canonical"]


def _is_canonical(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("canonical"), str)


def references(sql: str, name: str, schema: str, cache: Path | None = None
               ) -> tuple[frozenset[str], frozenset[str]]:
    """The models and the sources (tables of ``schema``) ``sql`` reads; ``cache``: where
    what parsing found is kept between processes (None: not kept)."""
    models, others = _named(sql, name, cache)
    return models, frozenset(table for db, table in others if db == schema)


@functools.lru_cache(maxsize=1024)
def _named(sql: str, name: str, cache: Path | None = None
           ) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """What ``sql`` (a check's) names, parsed once per process (the build and the report
    ask more than once) and once for all processes in the folder ``cache``: the models,
    and every other table as (schema, table)."""
    def named() -> dict:
        models, others = _references(_parse(sql, name))
        return {"models": sorted(models), "others": sorted(map(list, others))}

    found = remembered(cache, ("named", name, sql), named, _is_named, __file__)
    return frozenset(found["models"]), frozenset(map(tuple, found["others"]))


def _is_named(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("models"), list) and all(
        isinstance(m, str) for m in value["models"]) and isinstance(
        value.get("others"), list) and all(
        isinstance(o, list) and len(o) == 2 and all(isinstance(v, str) for v in o)
        for o in value["others"])


@functools.lru_cache(maxsize=1024)
def _analysed(sql: str, name: str, schema: str, cache: Path | None
              ) -> tuple[frozenset[str], frozenset[str], str]:
    """A model's SQL parsed once per process (a command, a test run, a code server
    discover the models more than once), and once for all processes while its text, sqlglot
    and this module stay the same (``parse_cache``, in the folder ``cache``; None: not
    kept): what it reads, and its canonical text."""
    found = remembered(cache, ("model", name, schema, sql),
                       lambda: _analyse(sql, name, schema), _is_analysis, __file__)
    return frozenset(found["models"]), frozenset(found["sources"]), found["canonical"]


def _analyse(sql: str, name: str, schema: str) -> dict:
    tree = _parse(sql, name)
    models, others = _references(tree)
    return {"models": sorted(models), "sources": sorted(t for db, t in others if db == schema),
            "canonical": tree.sql(dialect="duckdb", comments=False)}


def _is_analysis(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("canonical"), str) and all(
        isinstance(value.get(k), list) and all(isinstance(v, str) for v in value[k])
        for k in ("models", "sources"))


def _references(tree: exp.Expression) -> tuple[set[str], set[tuple[str, str]]]:
    """The models a parsed query reads (its own CTEs aside), and every other table it
    names as (schema, table): a source where the schema is the sources'."""
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    models, others = set(), set()
    for table in tree.find_all(exp.Table):
        if table.name and table.name not in ctes and table.db in ("", "main", STAGING_SCHEMA):
            models.add(table.name)
        else:
            others.add((table.db, table.name))
    return models, others


def discover_models(models_dir: Path, sources: Sources, dictionary: Dictionary | None = None,
                    cache: Path | None = None) -> dict[str, Model]:
    """Every model below ``models_dir`` with the models and sources it reads;
    ``dictionary``: the folder's, if it was read already; ``cache``: the folder where
    what parsing found is kept between processes (``parse_cache``; None: not kept)."""
    found: dict[str, Model] = {}
    dictionary = dictionary or load_dictionary(models_dir, STAGES)
    for stage in STAGES:
        for path in sorted((models_dir / stage).glob("*.sql")):
            sql = path.read_text(encoding="utf-8")
            models, tables, canonical = _analysed(sql, path.stem, sources.schema, cache)
            if path.stem in found:
                raise ModelError(f"model {path.stem} is defined twice")
            doc = dictionary.models.get(path.stem)
            found[path.stem] = Model(
                path.stem, stage, path, sql, models, tables,
                _materialization(dictionary, path.stem),
                canonical=canonical,
                grain=doc.grain if doc else (), rows=doc.rows if doc else "",
                owner=doc.owner if doc else None)
    if not found:
        raise ModelError(f"no SQL models found below {models_dir} (expected "
                         f"{', '.join(STAGES)} folders of .sql files): is the package "
                         "installed without its SQL files?")
    for model in found.values():
        unknown = model.model_deps - found.keys()
        if unknown:
            raise ModelError(f"model {model.name} reads {sorted(unknown)}, which no model defines")
        unknown_sources = model.source_deps - sources.areas.keys()
        if unknown_sources:
            raise ModelError(f"model {model.name} reads {sources.schema} tables "
                             f"{sorted(unknown_sources)}, which the project's sources do "
                             f"not have")
    return _partition_areas(found, sources)


@dataclass(frozen=True)
class SourceColumns:
    """What a staging model calls each column of the source table it reads."""

    table: str
    model: str
    columns: dict[str, str]
    """source column -> staging column (the same name where it is not renamed)."""

    @property
    def renamed(self) -> dict[str, str]:
        return {theirs: ours for theirs, ours in self.columns.items() if theirs != ours}


def source_columns(models: dict[str, Model]) -> list[SourceColumns]:
    """Per source table, its columns as its staging model names them: each projection of
    the select that reads the table's ``source`` CTE, over one source column (or named as
    one of its columns), is that column renamed, cast or tidied."""
    found = []
    for model in sorted(models.values(), key=lambda m: m.name):
        if model.stage != "staging" or len(model.source_deps) != 1:
            continue
        (table,) = model.source_deps
        tree = _parse(model.sql, model.name)
        columns: dict[str, str] = {}
        for select in tree.find_all(exp.Select):
            source = select.args.get("from_") or select.args.get("from")  # sqlglot 26-30
            if not source or not isinstance(source.this, exp.Table) \
                    or source.this.name != "source":
                continue
            for projection in select.expressions:
                used = {c.name for c in projection.find_all(exp.Column)}
                name = projection.alias_or_name
                if len(used) == 1 and name:
                    columns.setdefault(used.pop(), name)
                elif name in used:  # coalesce(nullif(external_name, ''), name) ...
                    columns.setdefault(name, name)
        if columns:
            found.append(SourceColumns(table, model.name, columns))
    return found


def only_in_build(sql: str, name: str, models: dict[str, Model], cache: Path | None = None
                  ) -> bool:
    """Whether ``sql`` (a check's) reads a model the file does not store: only a build,
    which computes it, can run it (``cache``: as ``references``)."""
    return any(not models[m].stored for m in _named(sql, name, cache)[0] if m in models)


def qualify_staging(sql: str, models: dict[str, Model], scratch: str | None = None) -> str:
    """``sql`` with every reference to a staging model written ``staging.<model>``, so a
    view reads the same tables whatever schema search path its reader has; with
    ``scratch``, ``<scratch>.staging.<model>``: the catalog a build computes them in
    (``Model.stored``), whichever catalog is in use."""
    staging = [name for name, model in models.items() if model.schema == STAGING_SCHEMA]
    if not staging:
        return sql
    pattern = re.compile(r"(?<![.\w])(" + "|".join(map(re.escape, staging)) + r")\b")
    return pattern.sub(rf"{scratch + '.' if scratch else ''}{STAGING_SCHEMA}.\1", sql)


def materialize(con: duckdb.DuckDBPyConnection, models: dict[str, Model], name: str,
                how: str = "table", scratch: str | None = None) -> None:
    """``models[name]`` created as ``how`` (``table``, ``view``, ``or replace table`` ...)
    in the catalog in use; with ``scratch``, a model that is not stored (staging) in that
    catalog instead, where the models after it read it. A failure names the model and
    its file."""
    model = models[name]
    where = model.qualified if model.stored or scratch is None else f"{scratch}.{model.qualified}"
    try:
        con.execute(f"create {how} {where} as {qualify_staging(model.sql, models, scratch)}")
    except duckdb.Error as exc:
        raise ModelError(f"model {name} ({model.path.name}): {exc}") from None


def build_order(models: dict[str, Model]) -> list[str]:
    """Model names so that every model comes after the models it reads."""
    graph = {name: set(model.model_deps) for name, model in models.items()}
    return list(TopologicalSorter(graph).static_order())
